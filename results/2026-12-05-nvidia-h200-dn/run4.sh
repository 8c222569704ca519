#!/usr/bin/env bash
# The device-side command of 4-final (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run4.sh
# With dn 3 now the default: on top of it cm 3 (the plan's copy of the matrices with the down and output
# projections column-major), cm 4 (q|k|v and gate|up word-interleaved), cm 7 (all three), rs (the FFN step's row
# sums by shuffles) and rs with cm 7, interleaved with the default, 2 rounds; once each the old default (dn 0),
# cm 1 and cm 2; then the plan runs with both drivers: the default and rs + cm 7 on the 128-token prompt, the
# default on the short one.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2; do
  go def$i "" "${P[@]}"
  go cm3_$i '{"cm": 3}' "${P[@]}"
  go cm4_$i '{"cm": 4}' "${P[@]}"
  go cm7_$i '{"cm": 7}' "${P[@]}"
  go rs$i '{"rs": 1}' "${P[@]}"
  go rscm7_$i '{"rs": 1, "cm": 7}' "${P[@]}"
done
go dn0 '{"dn": 0}' "${P[@]}"
go cm1 '{"cm": 1}' "${P[@]}"
go cm2 '{"cm": 2}' "${P[@]}"
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
go long "" "${Q[@]}"
go longrscm7 '{"rs": 1, "cm": 7}' "${Q[@]}"
go short "" "${Q[@]}" --prompt "The capital of France is"
tar -C "$OUT" -czf "$OUT/res.tgz" res
