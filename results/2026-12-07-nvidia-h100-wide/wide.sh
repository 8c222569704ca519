#!/usr/bin/env bash
# Device-side command (one call): where is the robustness cost paid (results/2026-12-07-nvidia-h100-safety:
# disable_robustness took GPU time from 0.689 to 0.603 ms per token)?  With robustness on, Dawn on Vulkan (where
# VK_EXT_robustness2 is offered) leaves storage-buffer bounds to the driver (robustBufferAccess2) and Tint clamps the
# rest (workgroup, function and private arrays, vector components) where its integer range analysis cannot prove an
# index in range, and bounds loops it cannot prove finite with a 64-bit counter.  disable_robustness drops all of
# it.  Flag sets, each seen by the page's safety probe:
#   base  the recipe's flags;  rob  + disable_robustness;
#   ra1   --disable-dawn-features=vulkan_use_buffer_robust_access2 (Tint clamps storage indices too; the probe's
#         read past the binding should come back clamped instead of zero);
#   nira  --disable-dawn-features=enable_integer_range_analysis_in_robustness (every clamp kept: how much of the
#         cost the range analysis already removes, so how much more provable indices could remove).
# 128 tokens of "Once upon a time", K = 8, resident, JS, 3 runs each, two interleaved rounds: the defaults under all
# four; wv 1 (layer matrices 8 bytes a load), hq 1 (the head's items as whole lines) and both, under base and rob.
# Then the ablations under base and rob: skip 1 (no accumulator atomics), skip 192 (no layer work), skip 256 (no
# head); if the checks' 0.085 ms shrinks with one of them gone, that piece is where it is paid.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
declare -A FL=([base]="$GPU_FLAGS" [rob]="$(mk disable_robustness)"
               [ra1]="$GPU_FLAGS --disable-dawn-features=vulkan_use_buffer_robust_access2"
               [nira]="$GPU_FLAGS --disable-dawn-features=enable_integer_range_analysis_in_robustness")
P=(--param plans=resident --param drivers=js)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
gof w0 base "${P[@]}"
for r in 1 2; do
  for f in base rob ra1 nira; do gof d_${f}_$r $f "${P[@]}"; done
  for f in base rob; do
    gof wv_${f}_$r $f "${P[@]}" --param 'resident_tuning={"wv": 1}'
    gof hq_${f}_$r $f "${P[@]}" --param 'resident_tuning={"hq": 1}'
    gof wvhq_${f}_$r $f "${P[@]}" --param 'resident_tuning={"wv": 1, "hq": 1}'
  done
done
for f in base rob; do
  gof sk1_$f $f "${P[@]}" --param 'resident_tuning={"skip": 1}'
  gof sk192_$f $f "${P[@]}" --param 'resident_tuning={"skip": 192}'
  gof sk256_$f $f "${P[@]}" --param 'resident_tuning={"skip": 256}'
done
