# Sourced, after results/2026-12-05-nvidia-h200-dn/common.sh, by the device scripts that vary Chromium's flags:
# safety.sh here, ../2026-12-07-nvidia-h100-wide/wide.sh and ahead.sh, ../2026-12-07-nvidia-h100-cm8/cm8.sh and
# ../pending/h200.sh.  (Before the sixteenth session's review each script defined these itself, with the same bodies.)
pack() { tar -C "$OUT" -czf "$OUT/res.tgz" res; }        # $OUT/res as one file, after every run
mk() { echo "$GPU_FLAGS" | sed "s/--enable-dawn-features=vulkan_enable_f16_on_nvidia/--enable-dawn-features=vulkan_enable_f16_on_nvidia,$1/"; }
gof() {  # name flags-key args...: one bench run with the caller's flag set ${FL[key]} (declare -A FL first)
  local n=$1 f=$2; shift 2
  timeout 200 python3 build.py bench --browser "$CHROMIUM" --browser-flags "${FL[$f]}" --dist "$DIST" \
    --json "$R/$n.json" "${LONG[@]}" "$@" > "$R/$n.txt" 2>&1
  python3 results/summarize.py "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"; pack
}
