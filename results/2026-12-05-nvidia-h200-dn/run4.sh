#!/usr/bin/env bash
# NOT RUN YET: this session's device time ran out before it (see ../README.md).  The device-side command of
# 4-final (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run4.sh
# With dn 3 now the default: on top of it cm 7 (the plan's copy of the matrices with the down and output
# projections column-major and q|k|v, gate|up word-interleaved), cm 3 and cm 4, interleaved with the default,
# 2 rounds; then the plan runs with both drivers, the default and cm 7.  Short of device time: res.tgz is rewritten after every run, so a cut-off call
# still brings back what it measured.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g def$i "" "${P[@]}"
  g cm7_$i '{"cm": 7}' "${P[@]}"
  g cm3_$i '{"cm": 3}' "${P[@]}"
  g cm4_$i '{"cm": 4}' "${P[@]}"
done
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
g long "" "${Q[@]}"
g longcm7 '{"cm": 7}' "${Q[@]}"
