#!/usr/bin/env bash
# Device-side command of 2-pre: persist 1, 2 (each step's first weights and norm weights loaded before the previous
# step's barrier) and 3 (the ATTN step's first K/V items too) against the defaults, interleaved, 128 tokens, JS.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g base$i "" "${P[@]}"
  g p1_$i '{"persist": 1}' "${P[@]}"
  g p2_$i '{"persist": 2}' "${P[@]}"
  g p3_$i '{"persist": 3}' "${P[@]}"
done
