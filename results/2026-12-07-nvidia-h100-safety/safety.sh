#!/usr/bin/env bash
# Device-side command (one call): what WebGPU's two per-dispatch safety guarantees cost the resident plan, where
# the GPU time per token goes with today's defaults, and the issue-6 rates at the default K = 4.
# 1. Dawn toggles, interleaved over 3 rounds (order reversed in round 2), 128 tokens of "Once upon a time", K = 8,
#    resident, JS, 3 runs each: the recipe's flags (base); + disable_robustness (rob); + disable_workgroup_init
#    (wgi); + both (both).  Every run's env block records the flags (env.launch) and what the safety probe saw
#    (env.safety), so each row shows whether the toggle took effect.
# 2. Ablations on the defaults (tokens meaningless): skip 256 (no head), skip 192 (no layer work: the steps'
#    dispatches only), skip 1 (no accumulator adds/reads); and the per-kind GPU profile (profile=1) with base flags
#    and with both toggles.
# 3. What our own GPU timing costs: 128 tokens at K = 4, JS, timestamps on (t1) and off (t0, gpu_timing=0),
#    interleaved, 3 rounds.
# The runs are ordered by how much they are wanted (see below), rounds spread through the call.  The block records give ~24 µs of GPU time per block beyond its tokens.
# 4. The issue-6 rates at K = 4 (the default) and K = 8: 128 tokens and the 30-token answer, both drivers,
#    interleaved; then the compare suite with its defaults.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
declare -A FL=([base]="$GPU_FLAGS" [rob]="$(mk disable_robustness)" [wgi]="$(mk disable_workgroup_init)"
               [both]="$(mk disable_robustness,disable_workgroup_init)")
P=(--param plans=resident --param drivers=js)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
# Most wanted first: each run is packed as it ends, so a call cut short still brings back what ran.
gof w0 base "${P[@]}"
for f in base rob wgi both; do gof ${f}_1 $f "${P[@]}"; done
gof t1_1 base "${P[@]}" --k 4
gof t0_1 base "${P[@]}" --k 4 --param gpu_timing=0
for f in both wgi rob base; do gof ${f}_2 $f "${P[@]}"; done
gof t0_2 base "${P[@]}" --k 4 --param gpu_timing=0
gof t1_2 base "${P[@]}" --k 4
gof skip192 base "${P[@]}" --param 'resident_tuning={"skip": 192}'
gof skip256 base "${P[@]}" --param 'resident_tuning={"skip": 256}'
S=(--param plans=resident --param drivers=js,python --prompt "The capital of France is")
L=(--param plans=resident --param drivers=js,python)
gof s4_1 base "${S[@]}" --k 4
gof l4_1 base "${L[@]}" --k 4
gof s8_1 base "${S[@]}" --k 8
gof l8_1 base "${L[@]}" --k 8
gof prof_base base "${P[@]}" --param profile=1
for f in base rob wgi both; do gof ${f}_3 $f "${P[@]}"; done
gof t1_3 base "${P[@]}" --k 4
gof t0_3 base "${P[@]}" --k 4 --param gpu_timing=0
gof skip1 base "${P[@]}" --param 'resident_tuning={"skip": 1}'
gof s4_2 base "${S[@]}" --k 4
gof l4_2 base "${L[@]}" --k 4
gof s8_2 base "${S[@]}" --k 8
gof l8_2 base "${L[@]}" --k 8
timeout 150 "${B[@]}" --json "$R/compare.json" --suite compare --max-new-tokens 32 --runs 3 > "$R/compare.txt" 2>&1
python3 results/summarize.py "$R/compare.json" >> "$R/summary.txt"; echo "compare $SECONDS s" >> "$R/times.txt"; pack
