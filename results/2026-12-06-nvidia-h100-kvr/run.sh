#!/usr/bin/env bash
# Device-side command (one call; on this loan without its last three lines, the compare suite: `head -n -3 run.sh`): kvr 1 (the attention's prefetched K/V items in named variables
# instead of arrays passed by value) against the defaults, interleaved, 128 tokens, JS, K = 8; kvr with kv_pre 5;
# then both plans with both drivers, with the defaults and with kvr; then the compare suite.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2 3; do
  g base$i "" "${P[@]}"
  g kvr$i '{"kvr": 1}' "${P[@]}"
  g kvr5_$i '{"kvr": 1, "kv_pre": 5}' "${P[@]}"
done
g long "" --param plans=resident,gpu_loop --param drivers=js,python
g longkvr '{"kvr": 1}' --param plans=resident,gpu_loop --param drivers=js,python
# The compare suite with the defaults (decode rate after the first token for every engine, ours included).
timeout 300 "${B[@]}" --json "$R/compare.json" --suite compare --max-new-tokens 32 --runs 3 > "$R/compare.txt" 2>&1
echo "compare $SECONDS s" >> "$R/times.txt"; tar -C "$OUT" -czf "$OUT/res.tgz" res
