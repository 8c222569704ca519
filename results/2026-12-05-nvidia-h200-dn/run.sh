#!/usr/bin/env bash
# The device-side command of 1-sweep (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run.sh
# dn 1 and 3 (the norm's sums off the path to the matvec), sgl 4 and 8 (lanes per attention position; 16 is the
# default on the H200), interleaved with the defaults, 3 rounds; then once each: wo_parts 5, no attention
# (skip 4: how the time per token grows with the context), and K = 16 and 32 (fewer blocks per run).
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3; do
  go base$i "" "${P[@]}"
  go dn1_$i '{"dn": 1}' "${P[@]}"
  go dn3_$i '{"dn": 3}' "${P[@]}"
  go sgl4_$i '{"sgl": 4}' "${P[@]}"
  go sgl8_$i '{"sgl": 8}' "${P[@]}"
done
go wo5 '{"wo_parts": 5}' "${P[@]}"
go noattn '{"skip": 4}' "${P[@]}"
go k16 "" "${P[@]}" --k 16
go k32 "" "${P[@]}" --k 32
go k32dn3 '{"dn": 3}' "${P[@]}" --k 32
tar -C "$OUT" -czf "$OUT/res.tgz" res
