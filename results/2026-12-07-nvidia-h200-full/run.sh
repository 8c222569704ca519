#!/usr/bin/env bash
# Device-side command (one call): every suite on the current code, with the defaults, as in
# ../2026-12-06-nvidia-h100-full/run.sh, on an H200. The dispatch suite goes last with a 330 s timeout (it took 169 s
# on the H100; 200 s was too short there), after the K sweep of ksweep.sh. Results are
# re-packed after each step, so a call cut short at its 600 s still brings back the steps before.
source results/2026-12-05-nvidia-h200-dn/common.sh
pack() { tar -C "$OUT" -czf "$OUT/res.tgz" res; }
suite() {  # name timeout args...
  local n=$1 t=$2; shift 2
  timeout "$t" "${B[@]}" --json "$R/$n.json" "$@" > "$R/$n.txt" 2>&1
  python3 results/summarize.py "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"; pack
}
go w0 "" --param plans=resident --param drivers=js; pack
go long "" --param plans=resident,gpu_loop --param drivers=js,python; pack
suite amortize 240 --suite amortize
suite llm 60 --suite llm --plan resident --driver js --max-new-tokens 32
suite compare 150 --suite compare --max-new-tokens 32 --runs 3
source results/2026-12-06-nvidia-h100-ksweep/ksweep.sh                # the K sweep, on this card too (same shell: one SECONDS clock)
suite dispatch 330 --suite dispatch
