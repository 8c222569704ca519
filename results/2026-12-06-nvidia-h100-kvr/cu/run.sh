#!/usr/bin/env bash
# Device-side command (third call; ran on an H100, results in res/ here): cu 1 (attn_sg's merge of its 16 subgroups over a constant bound, so that the
# compiler can unroll it) against the defaults, interleaved, 128 tokens, resident, JS, K = 8; then both plans
# with both drivers, with the defaults and with cu.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g c_w0 "" "${P[@]}"
for i in 1 2 3; do
  g c_base$i "" "${P[@]}"
  g c_cu$i '{"cu": 1}' "${P[@]}"
done
g c_long "" --param plans=resident,gpu_loop --param drivers=js,python
g c_longcu '{"cu": 1}' --param plans=resident,gpu_loop --param drivers=js,python
