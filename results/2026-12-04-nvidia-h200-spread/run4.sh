#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-spread/4-wg (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-spread/run4.sh
# Workgroup sizes between 512 (the default) and 1024 that are multiples of 64, none tried before: 576 gives each
# of the d_model = 576 output rows of the down projection its own invocation.  Interleaved, 3 rounds.
source results/2026-12-04-nvidia-h200-spread/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3; do
  go base$i "" "${P[@]}"
  go wg576_$i '{"wg": 576}' "${P[@]}"
  go wg640_$i '{"wg": 640}' "${P[@]}"
  go wg768_$i '{"wg": 768}' "${P[@]}"
done
tar -C "$OUT" -czf "$OUT/res.tgz" res
