#!/usr/bin/env bash
# The device-side command of 4-final (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-dn/run4.sh
# With dn 3 now the default: the default against the old one (dn 0) and three small changes on top (fold,
# kv_pre 3, wo_parts 8), interleaved, 2 rounds; then the plan runs with both drivers on both prompts.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2; do
  go def$i "" "${P[@]}"
  go dn0_$i '{"dn": 0}' "${P[@]}"
  go fold$i '{"fold": 1}' "${P[@]}"
  go pre3_$i '{"kv_pre": 3}' "${P[@]}"
  go wo8_$i '{"wo_parts": 8}' "${P[@]}"
done
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
go long "" "${Q[@]}"
go long2 "" "${Q[@]}"
go short "" "${Q[@]}" --prompt "The capital of France is"
tar -C "$OUT" -czf "$OUT/res.tgz" res
