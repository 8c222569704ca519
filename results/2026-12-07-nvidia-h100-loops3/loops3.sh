#!/usr/bin/env bash
# Device-side command (one call), after ../2026-12-07-nvidia-h100-loops2/: without the checks, the loops in the form
# Tint proves finite (v2, the current wgsl/resident.wgsl) were still 4% slower than the kernel before them, 3-5% in
# each kind.  v3 (made here from v2 by loops_v3.py, which turns the early `if (i >= n) { break; }` of its 25 loops
# bounded by a ceiling division by WG, or IT_MAX, into a guard around the rest of the body, so their trip count is
# a constant) tests whether the break is what costs.  On an H200 the issue-6 rates of h200.sh come first, with v2.
# Then v2 against v3: 128 tokens at K = 8, JS, three interleaved rounds with the checks on, one run each with them
# off, and the per-kind profile of v3 both ways.  Each run is packed as it ends.
bash results/pending/h200.sh                                          # runs nothing unless the card is an H200
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
cp wgsl/resident.wgsl "$R/v2.wgsl"; python3 results/2026-12-07-nvidia-h100-loops3/loops_v3.py wgsl/resident.wgsl "$R/v3.wgsl"
use() { case $1 in v2) cp "$R/v2.wgsl" "$DIST/wgsl/resident.wgsl";;
                   v3) cp "$R/v3.wgsl" "$DIST/wgsl/resident.wgsl";; esac; }
J=(--param plans=resident --param drivers=js)
declare -A FL; FL[base]=$GPU_FLAGS; FL[rob]=$(mk disable_robustness)
use v3; go w3 "" "${J[@]}"; pack
round() { for v in "$@"; do use $v; go "${v}_$i" "" "${J[@]}"; pack; done; }
i=1; round v2 v3; i=2; round v3 v2; i=3; round v2 v3
for v in v2 v3; do use $v; gof "rob_$v" rob "${J[@]}"; done
use v3; gof prof_v3 base "${J[@]}" --param profile=1; gof profrob_v3 rob "${J[@]}" --param profile=1
use v2
