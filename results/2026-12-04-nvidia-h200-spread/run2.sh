#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-spread/2-bits (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-spread/run2.sh
# spread taken apart (1-ab: spread 1 = bits 1 + 2 was 7% slower), interleaved: bit 1 (residual copies shared by
# every workgroup), bit 2 (each workgroup zeroes a share at its step's start), bit 4 (the ATTN step's workgroups
# without a head zero both slots; the QKV step zeroes nothing), 1 + 4, and 4 with fold.  128 tokens, resident, JS.
source results/2026-12-04-nvidia-h200-spread/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3 4; do
  go base$i "" "${P[@]}"
  go s1_$i '{"spread": 1}' "${P[@]}"
  go s2_$i '{"spread": 2}' "${P[@]}"
  go s4_$i '{"spread": 4}' "${P[@]}"
  go s5_$i '{"spread": 5}' "${P[@]}"
done
go s4fold '{"spread": 4, "fold": 1}' "${P[@]}"
tar -C "$OUT" -czf "$OUT/res.tgz" res
