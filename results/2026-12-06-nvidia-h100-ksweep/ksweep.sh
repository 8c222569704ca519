#!/usr/bin/env bash
# Device-side command (one call, alone or from full.sh): tokens per block K for the resident plan, interleaved, two rounds. A block loop
# learns of EOS only when the block holding it is read back, so the tokens computed after EOS in that block (up to
# K - 1) are GPU time the answer waits for. "The capital of France is" stops at EOS after 30 tokens (max 128 new);
# "Once upon a time" runs 128 tokens, where smaller K means more blocks and more gaps between them. Then the compare
# suite at K = 4 (its default K is 16).
declare -F go > /dev/null || source results/2026-12-05-nvidia-h200-dn/common.sh   # sourced from full.sh: already there
pack() { tar -C "$OUT" -czf "$OUT/res.tgz" res; }
for r in 1 2; do
  for k in 4 8 16; do
    go "s${k}_$r" "" --param plans=resident --param drivers=js,python --k "$k" --prompt "The capital of France is"; pack
    go "l${k}_$r" "" --param plans=resident --param drivers=js,python --k "$k"; pack
  done
done
timeout 150 "${B[@]}" --json "$R/compare_k4.json" --suite compare --max-new-tokens 32 --runs 3 --k 4 > "$R/compare_k4.txt" 2>&1
python3 results/summarize.py "$R/compare_k4.json" >> "$R/summary.txt"; echo "compare_k4 $SECONDS s" >> "$R/times.txt"; pack
