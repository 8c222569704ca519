#!/usr/bin/env bash
# Device-side command of this folder (one call): every suite on the current code, with the defaults, so that the
# README's reference tables all come from one code version and one loan. After a warm-up: the dispatch suite (full),
# the amortize suite (every plan, both drivers, 32 tokens, 5 runs, isolation), the llm suite (resident, JS), the
# 128-token block-loop plan runs with both drivers (both decode rates), then the compare suite. Each step has its own
# timeout and the results are re-packed after each, so a step that fails or a call that is cut short keeps the rest.
source results/2026-12-05-nvidia-h200-dn/common.sh
pack() { echo "$1 $SECONDS s" >> "$R/times.txt"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
suite() {  # name timeout args...
  local n=$1 t=$2; shift 2
  timeout "$t" "${B[@]}" --json "$R/$n.json" "$@" > "$R/$n.txt" 2>&1
  python3 results/summarize.py "$R/$n.json" >> "$R/summary.txt"; pack "$n"
}
go w0 "" --param plans=resident --param drivers=js; pack w0
suite dispatch 200 --suite dispatch
suite amortize 240 --suite amortize
suite llm 60 --suite llm --plan resident --driver js --max-new-tokens 32
go long "" --param plans=resident,gpu_loop --param drivers=js,python; pack long
suite compare 150 --suite compare --max-new-tokens 32 --runs 3
