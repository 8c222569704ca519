#!/usr/bin/env bash
# Device-side command of 3-cm1 (same loan as 2-cm): cm 1 with 128 head rows against cm 3 (the default) and cm 1, 3 rounds.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2 3; do
  g def$i "" "${P[@]}"
  g cm1_$i '{"cm": 1}' "${P[@]}"
  g cm1hr128_$i '{"cm": 1, "head_rows": 128}' "${P[@]}"
done
