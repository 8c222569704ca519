#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-spread/3-lcopy (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-spread/run3.sh
# 2-bits showed that atomics added mid-step by every workgroup (spread 1) cost 0.033 ms/token.  lcopy moves
# workgroup 0's residual copy (RF into RA in QKV, RA into RF in FFN) from the residual loop to the end of its
# step.  Interleaved, 5 rounds: default, lcopy, lcopy + spread 4, lcopy + fold; then the plan runs of the default
# and of lcopy, both drivers.  128 tokens, resident.
source results/2026-12-04-nvidia-h200-spread/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3 4 5; do
  go base$i "" "${P[@]}"
  go lc$i '{"lcopy": 1}' "${P[@]}"
  go lcs4_$i '{"lcopy": 1, "spread": 4}' "${P[@]}"
  go lcf$i '{"lcopy": 1, "fold": 1}' "${P[@]}"
done
go longbase "" --param plans=resident --param drivers=js,python
go longlc '{"lcopy": 1}' --param plans=resident --param drivers=js,python
tar -C "$OUT" -czf "$OUT/res.tgz" res
