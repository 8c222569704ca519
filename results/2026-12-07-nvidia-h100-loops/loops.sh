#!/usr/bin/env bash
# Device-side command (one call): the resident kernel with every loop in the form Tint proves finite (this commit's
# wgsl/resident.wgsl, no iteration counters) against the kernel before (loops_before.wgsl, 41 of the step entry's 75
# loops with a counter).  Same tokens by construction.  128 tokens of "Once upon a time" at K = 8 (the H200 account's
# shape), JS, four interleaved rounds, order reversed every other round; the 30-token answer at K = 4, both drivers,
# two rounds; one run of each kernel with the checks off (disable_robustness), to see what is left of their cost.
# On an H200, then the issue-6 runs of h200.sh with the new kernel.  Packed after every run.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
cp wgsl/resident.wgsl "$R/after.wgsl"
use() { cp "$1" "$DIST/wgsl/resident.wgsl"; }
J=(--param plans=resident --param drivers=js)
S=(--param plans=resident --param drivers=js,python --prompt "The capital of France is" --k 4)
go w0 "" "${J[@]}"
for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then o=(before after); else o=(after before); fi
  for v in "${o[@]}"; do
    if [ "$v" = before ]; then use results/2026-12-07-nvidia-h100-loops/before.wgsl; else use "$R/after.wgsl"; fi
    go "${v}_$i" "" "${J[@]}"; pack
  done
done
for i in 1 2; do
  use results/2026-12-07-nvidia-h100-loops/before.wgsl; go "sbefore_$i" "" "${S[@]}"; pack
  use "$R/after.wgsl"; go "safter_$i" "" "${S[@]}"; pack
done
declare -A FL; FL[rob]=$(mk disable_robustness)
use results/2026-12-07-nvidia-h100-loops/before.wgsl; gof rob_before rob "${J[@]}"
use "$R/after.wgsl"; gof rob_after rob "${J[@]}"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "loops.sh: not an H200, no issue-6 runs"; exit 0; }
bash results/pending/h200.sh
