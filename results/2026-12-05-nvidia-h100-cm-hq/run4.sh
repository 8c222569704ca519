#!/usr/bin/env bash
# Device-side command of 4-final: the new GPU defaults (cm 1, 128 head rows) against the previous ones
# ({"cm": 0, "head_rows": 64}), 2 rounds, 128 tokens, JS; then both plans with both drivers with the new defaults.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g new$i "" "${P[@]}"
  g old$i '{"cm": 0, "head_rows": 64}' "${P[@]}"
done
g long "" --param plans=resident,gpu_loop --param drivers=js,python
