#!/usr/bin/env bash
# Device-side command (one call), after ../2026-12-07-nvidia-h100-loops3/: the other kernels' loops in the form Tint
# proves finite, as wgsl/resident.wgsl's since the twentieth session.  On an H200 the issue-6 rates of h200.sh come
# first (resident only, which this change does not touch).  Then the kernels before (before/, the twelve
# kernels as of commit 09d8f36) against after (the working tree's wgsl/): the four plans that use them (op_by_op,
# token_pass, fused, gpu_loop), 128 tokens of "Once upon a time", K = 8, JS, three interleaved rounds, one run each
# with the checks off, and one amortize run each with the isolation experiment (whose matvec is among the twelve).
# Each run is packed as it ends.
[ -d .git ] && [ -n "$(git status --porcelain -- wgsl app)" ] && echo "loops4.sh: the working tree's kernels differ from HEAD" >&2
bash results/pending/h200.sh                                          # runs nothing unless the card is an H200
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
mkdir -p "$R/after"; cp wgsl/*.wgsl "$R/after/"
use() { case $1 in before) cp results/2026-12-07-nvidia-h200-loops4/before/*.wgsl "$DIST/wgsl/";;
                   after) cp "$R"/after/*.wgsl "$DIST/wgsl/";; esac; }
P=(--param plans=op_by_op,token_pass,fused,gpu_loop --param drivers=js)
declare -A FL; FL[base]=$GPU_FLAGS; FL[rob]=$(mk disable_robustness)
use after; go w4 "" --param plans=gpu_loop --param drivers=js; pack
round() { for v in "$@"; do use $v; go "${v}_$i" "" "${P[@]}"; pack; done; }
i=1; round before after; i=2; round after before; i=3; round before after
for v in before after; do use $v; gof "rob_$v" rob "${P[@]}"; done
for v in before after; do use $v
  timeout 200 "${B[@]}" --json "$R/iso_$v.json" --suite amortize --param plans=gpu_loop --param drivers=python --runs 3 > "$R/iso_$v.txt" 2>&1
  python3 results/summarize.py "$R/iso_$v.json" >> "$R/summary.txt"; echo "iso_$v $SECONDS s" >> "$R/times.txt"; pack
done
use after
rm -r "$R/after"; pack
