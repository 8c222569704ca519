#!/usr/bin/env bash
# Device-side command (one call, any GPU): the waits for the prefill's end and the first and last readbacks with
# pokes of each kind (poke=50: a write or an empty submit at most every 50 µs) against none, interleaved, JS, three
# rounds: 128 tokens of "Once upon a time" at K = 8 (none, write, submit) and the 30-token answer to "The capital
# of France is" at the default K (none, write); then, on an H200 only, the first three runs of ../pending/h200.sh
# (128 tokens at K = 4 and K = 8, the 30-token answer at K = 4, both drivers, no poke).
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
P=(--param plans=resident --param drivers=js)
S=(--param plans=resident --param drivers=js --prompt "The capital of France is" --k 4)
go w0 "" "${P[@]}"; pack
for i in 1 2 3; do
  go none_$i "" "${P[@]}"; pack
  go write_$i "" "${P[@]}" --param poke=50; pack
  go submit_$i "" "${P[@]}" --param poke=50 --param poke_with=submit; pack
  go snone_$i "" "${S[@]}"; pack
  go swrite_$i "" "${S[@]}" --param poke=50; pack
done
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 0
go l4_1 "" --param plans=resident --param drivers=js,python --k 4; pack
go l8_1 "" --param plans=resident --param drivers=js,python; pack
go s4_1 "" --param plans=resident --param drivers=js,python --prompt "The capital of France is" --k 4; pack
