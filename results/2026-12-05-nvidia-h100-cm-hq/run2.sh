#!/usr/bin/env bash
# Device-side command of 2-cm (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h100-cm-hq/run2.sh
# The new default (cm 3) against the old (cm 0), 3 rounds, then cm 1 and cm 2 alone and 128 head rows on top, 2
# rounds, 128 tokens, JS; then both plans with both drivers with the defaults.  res.tgz after every run.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2 3; do
  g def$i "" "${P[@]}"
  g cm0_$i '{"cm": 0}' "${P[@]}"
  if [ $i -lt 3 ]; then
    g cm1_$i '{"cm": 1}' "${P[@]}"
    g cm2_$i '{"cm": 2}' "${P[@]}"
    g hr128_$i '{"head_rows": 128}' "${P[@]}"
  fi
done
g long "" --param plans=resident,gpu_loop --param drivers=js,python
