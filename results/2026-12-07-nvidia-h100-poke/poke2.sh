#!/usr/bin/env bash
# Device-side command of the second call (run inline; saved here as sent): after poke.sh, five more interleaved rounds
# (4-8) of none and write pokes, 128 tokens at K = 8 and the 30-token answer at K = 4, JS.
source .gpu/device.sh && source results/2026-12-05-nvidia-h200-dn/common.sh && source results/2026-12-07-nvidia-h100-safety/flags.sh
P=(--param plans=resident --param drivers=js)
S=(--param plans=resident --param drivers=js --prompt "The capital of France is" --k 4)
go w0 "" "${P[@]}"
for i in 4 5 6 7 8; do
  go none_$i "" "${P[@]}"; go write_$i "" "${P[@]}" --param poke=50
  go snone_$i "" "${S[@]}"; go swrite_$i "" "${S[@]}" --param poke=50; pack
done
cat $R/summary.txt | grep -v safety | cut -c1-200
