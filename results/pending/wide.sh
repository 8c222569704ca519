#!/usr/bin/env bash
# Device-side command (one call): does the robustness cost (results/2026-12-07-nvidia-h100-safety: disable_robustness
# took GPU time from 0.689 to 0.603 ms per token) depend on how wide the kernel's loads are?  The existing knobs that
# widen loads, with the recipe's flags (base) and with disable_robustness (rob), 2 interleaved rounds, 128 tokens of
# "Once upon a time", K = 8, resident, JS, 3 runs each: defaults; wv 1 (layer matrices 8 bytes a load); hq 1 (the
# head's items as whole lines); both.  Then, to place the cost, the ablations with and without the checks: skip 1
# (no accumulator atomics), skip 192 (no layer work), skip 256 (no head); if the checks' 0.085 ms shrinks with one
# of them gone, that piece's storage accesses are where it is paid.
source results/2026-12-05-nvidia-h200-dn/common.sh
pack() { tar -C "$OUT" -czf "$OUT/res.tgz" res; }
mk() { echo "$GPU_FLAGS" | sed "s/--enable-dawn-features=vulkan_enable_f16_on_nvidia/--enable-dawn-features=vulkan_enable_f16_on_nvidia,$1/"; }
declare -A FL=([base]="$GPU_FLAGS" [rob]="$(mk disable_robustness)")
gof() {  # name flags-key args...
  local n=$1 f=$2; shift 2
  timeout 200 python3 build.py bench --browser "$CHROMIUM" --browser-flags "${FL[$f]}" --dist "$DIST" \
    --json "$R/$n.json" "${LONG[@]}" "$@" > "$R/$n.txt" 2>&1
  python3 results/summarize.py "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"; pack
}
P=(--param plans=resident --param drivers=js)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
gof w0 base "${P[@]}"
for r in 1 2; do
  for f in base rob; do
    gof d_${f}_$r $f "${P[@]}"
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
