#!/usr/bin/env bash
# Device-side command (one call, only worth running on an H200): the issue-6 rates with the new default K = 4.
# The 30-token answer ("The capital of France is", EOS at 30, up to 128 new) at K = 4 and K = 8, interleaved, three
# rounds of K = 4 and two of K = 8, both drivers; 128 tokens of "Once upon a time" at K = 8 (as every 128-token run
# here) and at K = 4 (the default since the fourteenth session; added in the sixteenth), two rounds, both drivers;
# then the compare suite with its defaults (K = 4 now).  The most wanted runs first (128 tokens at K = 4 and 8), each
# packed as it ends, so that a call cut short by its time limit still brings them back.
source results/2026-12-05-nvidia-h200-dn/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "h200.sh: not an H200, nothing run"; exit 0; }
source results/2026-12-07-nvidia-h100-safety/flags.sh
S=(--param plans=resident --param drivers=js,python --prompt "The capital of France is")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
go w0 "" --param plans=resident --param drivers=js; pack
go l4_1 "" --param plans=resident --param drivers=js,python --k 4; pack
go l8_1 "" --param plans=resident --param drivers=js,python; pack
go s4_1 "" "${S[@]}" --k 4; pack
go l4_2 "" --param plans=resident --param drivers=js,python --k 4; pack
go l8_2 "" --param plans=resident --param drivers=js,python; pack
go s8_1 "" "${S[@]}" --k 8; pack
go s4_2 "" "${S[@]}" --k 4; pack
go s8_2 "" "${S[@]}" --k 8; pack
go s4_3 "" "${S[@]}" --k 4; pack
timeout 150 "${B[@]}" --json "$R/compare.json" --suite compare --max-new-tokens 32 --runs 3 > "$R/compare.txt" 2>&1
python3 results/summarize.py "$R/compare.json" >> "$R/summary.txt"; echo "compare $SECONDS s" >> "$R/times.txt"; pack
