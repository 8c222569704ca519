#!/usr/bin/env bash
# The device-side command of 2-kvh (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run2.sh
# kvh (the K/V cache in f16) with and without dn 3, interleaved with the defaults and dn 3, 3 rounds; kv_pre 5 and
# touch 0 on top; then the plan runs of the best-looking pair with both drivers.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3; do
  go base$i "" "${P[@]}"
  go dn3_$i '{"dn": 3}' "${P[@]}"
  go kvh$i '{"kvh": 1}' "${P[@]}"
  go dn3kvh$i '{"dn": 3, "kvh": 1}' "${P[@]}"
done
go dn3kvhpre5 '{"dn": 3, "kvh": 1, "kv_pre": 5}' "${P[@]}"
go dn3kvht0 '{"dn": 3, "kvh": 1, "touch": 0}' "${P[@]}"
go dn3kvhpre5_2 '{"dn": 3, "kvh": 1, "kv_pre": 5}' "${P[@]}"
go dn3kvht0_2 '{"dn": 3, "kvh": 1, "touch": 0}' "${P[@]}"
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
go longbase "" "${Q[@]}"
go longdn3kvh '{"dn": 3, "kvh": 1}' "${Q[@]}"
tar -C "$OUT" -czf "$OUT/res.tgz" res
