#!/usr/bin/env bash
# Device-side command of 1-ab: persist (a whole token in one dispatch, grid barriers between its steps) against
# the defaults, interleaved, 128 tokens, JS, K = 8.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g persist$i '{"persist": 1}' "${P[@]}"
  g base$i "" "${P[@]}"
done
