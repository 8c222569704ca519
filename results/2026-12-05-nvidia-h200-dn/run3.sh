#!/usr/bin/env bash
# The device-side command of 3-sgb (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run3.sh
# sgb (the attention's prefetched positions outside its loop) with and without dn 3, interleaved with the
# defaults and dn 3, 3 rounds; dn 3 + sgb + kvh twice; then the plan runs of dn 3 + sgb with both drivers, and the
# 30-token prompt.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3; do
  go base$i "" "${P[@]}"
  go dn3_$i '{"dn": 3}' "${P[@]}"
  go sgb$i '{"sgb": 1}' "${P[@]}"
  go dn3sgb$i '{"dn": 3, "sgb": 1}' "${P[@]}"
done
go dn3sgbkvh1 '{"dn": 3, "sgb": 1, "kvh": 1}' "${P[@]}"
go dn3sgbkvh2 '{"dn": 3, "sgb": 1, "kvh": 1}' "${P[@]}"
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
go longdn3sgb '{"dn": 3, "sgb": 1}' "${Q[@]}"
go longbase "" "${Q[@]}"
go shortdn3sgb '{"dn": 3, "sgb": 1}' "${Q[@]}" --prompt "The capital of France is"
tar -C "$OUT" -czf "$OUT/res.tgz" res
