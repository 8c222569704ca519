#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-spread/1-ab (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-spread/run.sh
# Interleaved A/B/C/D of two resident_tuning knobs, off by default: spread (residual copies and slot zeroing
# shared by every workgroup, zeroing at a step's start) and afirst (accumulator words / q and position loaded
# before the weights).  128 tokens, resident, JS, 4 rounds; then the plan runs of the default and of both knobs.
set -u
R=$OUT/res; mkdir -p "$R"
cp -r app wgsl static index.html "$DIST/" && cp gpu_pyscript.json "$DIST/pyscript.json" || exit 4
B=(python3 build.py bench --browser "$CHROMIUM" --browser-flags "$GPU_FLAGS" --dist "$DIST")
LONG=(--suite amortize --param skip_isolation=1 --param skip_per_dispatch=1 --max-new-tokens 128 --runs 3 --k 8
      --prompt "Once upon a time")
go() {  # name tuning args...
  local n=$1 tun=$2; shift 2
  local T=(); [ -n "$tun" ] && T=(--param "resident_tuning=$tun")
  timeout 200 "${B[@]}" --json "$R/$n.json" "${LONG[@]}" "${T[@]}" "$@" > "$R/$n.txt" 2>&1
  python3 results/summarize.py "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"
}
P=(--param plans=resident --param drivers=js)
go w0 "" "${P[@]}"
for i in 1 2 3 4; do
  go base$i "" "${P[@]}"
  go sp$i '{"spread": 1}' "${P[@]}"
  go af$i '{"afirst": 1}' "${P[@]}"
  go spaf$i '{"spread": 1, "afirst": 1}' "${P[@]}"
done
go spaffold '{"spread": 1, "afirst": 1, "fold": 1}' "${P[@]}"
go longbase "" --param plans=resident --param drivers=js,python
go longspaf '{"spread": 1, "afirst": 1}' --param plans=resident --param drivers=js,python
tar -C "$OUT" -czf "$OUT/res.tgz" res
