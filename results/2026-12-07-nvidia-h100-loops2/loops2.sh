#!/usr/bin/env bash
# Device-side command (one call), after loops.sh: the loops without Tint's counters cut the GPU time per token 6% with
# the checks on (H100), but with the checks off the same kernel was 6% slower than the kernel before.  v1
# (../2026-12-07-nvidia-h100-loops/res/after.wgsl: a constant bound where the loop's end was one, else NO_END) against v2 (this commit's
# wgsl/resident.wgsl: the tightest constant bound everywhere but the attention's rounds) and the kernel before
# (../2026-12-07-nvidia-h100-loops/before.wgsl): 128 tokens at K = 8, JS, three interleaved rounds with the checks on, one run each with them
# off, then the per-kind GPU profile (profile=1) of before and v2, checks on and off.  On an H200, after rounds 1 and 2,
# the issue-6 rates with v2 (h200.sh's 128-token runs at K = 4 and 8 and the 30-token answer at K = 4, both drivers),
# so that a call cut short still brings them back.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
cp wgsl/resident.wgsl "$R/v2.wgsl"
use() { case $1 in before) cp results/2026-12-07-nvidia-h100-loops/before.wgsl "$DIST/wgsl/resident.wgsl";;
                   v1) cp results/2026-12-07-nvidia-h100-loops/res/after.wgsl "$DIST/wgsl/resident.wgsl";;
                   v2) cp "$R/v2.wgsl" "$DIST/wgsl/resident.wgsl";; esac; }
J=(--param plans=resident --param drivers=js)
declare -A FL; FL[base]=$GPU_FLAGS; FL[rob]=$(mk disable_robustness)
H200=0; grep -q H200 "$R/gpu.txt" && H200=1
S=(--param plans=resident --param drivers=js,python --prompt "The capital of France is")
issue6() {  # the issue-6 rates on the kernel in use (an H200 only): 128 tokens at K = 4 and 8, the 30-token answer
  [ $H200 = 1 ] || return 0
  go "l4_$1" "" --param plans=resident --param drivers=js,python --k 4; pack
  go "l8_$1" "" --param plans=resident --param drivers=js,python; pack
  go "s4_$1" "" "${S[@]}" --k 4; pack
}
use v2; go w0 "" "${J[@]}"; pack
round() { for v in "$@"; do use $v; go "${v}_$i" "" "${J[@]}"; pack; done; }
i=1; round before v1 v2; issue6 1
i=2; round v2 v1 before; use v2; issue6 2
i=3; round v1 before v2
for v in before v1 v2; do use $v; gof "rob_$v" rob "${J[@]}"; done
for v in before v2; do use $v; gof "prof_$v" base "${J[@]}" --param profile=1; gof "profrob_$v" rob "${J[@]}" --param profile=1; done
