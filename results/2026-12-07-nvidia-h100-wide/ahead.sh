#!/usr/bin/env bash
# Device-side command: encode_ahead (sixteenth session; the first decode block encoded while the GPU runs the
# prefill, submitted as soon as decode timing starts) against encode_ahead=0 (encoded after that start, as before),
# 128 tokens of "Once upon a time", K = 8, resident, both drivers, three interleaved rounds.  What to read: the
# rate from the prefill's end, and block_sent_ms[0] in the JSON (when the first block went to the GPU).
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
P=(--param plans=resident --param drivers=js,python)
for r in 1 2 3; do
  go ea1_$r "" "${P[@]}"; pack
  go ea0_$r "" "${P[@]}" --param encode_ahead=0; pack
done
