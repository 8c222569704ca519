#!/usr/bin/env bash
# The device-side command of 4-final (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run4.sh
# With dn 3 now the default: the default against the old one (dn 0), and on top cm 1 / 2 / 3 (the plan's copy of the
# matrices with the down / output / both projections column-major; 4: q|k|v and gate|up word-interleaved; 7: all
# three), rs (FFN row sums by shuffles) alone and with cm 7, wg 384 and fold, interleaved, 2 rounds;
# then the plan runs with both drivers on both prompts.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2; do
  go def$i "" "${P[@]}"
  go dn0_$i '{"dn": 0}' "${P[@]}"
  go cm1_$i '{"cm": 1}' "${P[@]}"
  go cm2_$i '{"cm": 2}' "${P[@]}"
  go cm3_$i '{"cm": 3}' "${P[@]}"
  go cm4_$i '{"cm": 4}' "${P[@]}"
  go cm7_$i '{"cm": 7}' "${P[@]}"
  go rs$i '{"rs": 1}' "${P[@]}"
  go rscm7_$i '{"rs": 1, "cm": 7}' "${P[@]}"
  go wg384_$i '{"wg": 384}' "${P[@]}"
  go fold$i '{"fold": 1}' "${P[@]}"
done
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
go long "" "${Q[@]}"
go long2 "" "${Q[@]}"
go short "" "${Q[@]}" --prompt "The capital of France is"
go longcm7 '{"cm": 7}' "${Q[@]}"
tar -C "$OUT" -czf "$OUT/res.tgz" res
