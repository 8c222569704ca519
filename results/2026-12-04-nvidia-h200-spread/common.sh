# Sourced by run.sh and run2.sh (device side, from the repo root): the bench command, the 128-token amortize
# arguments and go NAME TUNING ARGS... (one bench run into $OUT/res/NAME.json, its summary line and its time).
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
