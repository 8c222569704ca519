#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-spread/1-ab (../../../shared/gpu/README.md recipe), at
# commit db6175d, where spread was 0/1: its '{"spread": 1}' is '{"spread": 3}' (bits 1 and 2) of the bitmask that
# run2.sh uses.  It ran with common.sh's lines inline.
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-spread/run.sh
# Interleaved A/B/C/D of two resident_tuning knobs, off by default: spread (residual copies and slot zeroing
# shared by every workgroup, zeroing at a step's start) and afirst (accumulator words / q and position loaded
# before the weights).  128 tokens, resident, JS, 4 rounds; then the plan runs of the default and of both knobs.
source results/2026-12-04-nvidia-h200-spread/common.sh
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3 4; do
  go base$i "" "${P[@]}"
  go sp$i '{"spread": 1}' "${P[@]}"
  go af$i '{"afirst": 1}' "${P[@]}"
  go spaf$i '{"spread": 1, "afirst": 1}' "${P[@]}"
done
go spaffold '{"spread": 1, "afirst": 1, "fold": 1}' "${P[@]}"
go longbase "" --param plans=resident --param drivers=js,python
go longspaf '{"spread": 1, "afirst": 1}' --param plans=resident --param drivers=js,python
tar -C "$OUT" -czf "$OUT/res.tgz" res
