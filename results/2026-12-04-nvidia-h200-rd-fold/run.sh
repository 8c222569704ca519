#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-rd-fold (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && [PROMPT="Once upon a time" N=3] bash results/2026-12-04-nvidia-h200-rd-fold/run.sh
# PROMPT unset: the page's default prompt (30 tokens to EOS; how 1-sweep ran).  N: A/B rounds (default 2).
# It serves the packed site with this working tree's app/, wgsl/, static/, index.html and a freshly built
# pyscript.json (gpu_pyscript.json, untracked), and writes $OUT/res.tgz.  A/B runs are interleaved; the first
# run is a throw-away (the GPU clock ramps up after an idle spell).
set -u
P=(); [ -n "${PROMPT:-}" ] && P=(--prompt "$PROMPT")
R=$OUT/res; mkdir -p "$R"
cp -r app wgsl static index.html "$DIST/" && cp gpu_pyscript.json "$DIST/pyscript.json" || exit 4
BUDGET=${BUDGET:-560}

line() {  # file -> one summary line per plan row: plan driver tok/s gpu_ms wall_ms stopped tokens hash
  python3 - "$1" <<'PY'
import json, os, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(os.path.basename(sys.argv[1]), "no JSON:", e); sys.exit()
for p in (d.get("amortize") or {}).get("plans", []):
    t = p.get("generated_token_ids") or []
    print(os.path.basename(sys.argv[1]), p.get("plan"), p.get("driver"), "tok/s", p.get("decode_tok_per_s"),
          "gpu_ms", p.get("gpu_ms_per_token"), "ms", p.get("ms_per_token"), "disp", p.get("dispatches_per_token"),
          p.get("stopped"), len(t), hash(tuple(t)) % 100000, p.get("error") or p.get("unsupported") or "")
if "error" in d:
    print(os.path.basename(sys.argv[1]), "error:", str(d["error"])[:300])
PY
}

rt() {  # name tuning [extra bench args]: a resident run of 128 tokens, 3 timed runs, JS driver
  local n=$1 t=$2; shift 2
  if [ $SECONDS -gt "$BUDGET" ]; then echo "$n skipped (time)" >> "$R/summary.txt"; return 1; fi
  timeout 150 python3 build.py bench --dist "$DIST" --browser "$CHROMIUM" --browser-flags "$GPU_FLAGS" \
    --suite amortize --param skip_isolation=1 --max-new-tokens 128 --runs 3 --k 8 --param plans=resident \
    --param drivers=js --param skip_per_dispatch=1 --param resident_tuning="$t" --json "$R/$n.json" "${P[@]}" "$@" \
    > "$R/$n.txt" 2>&1
  line "$R/$n.json" >> "$R/summary.txt"
  echo "$n $SECONDS s" >> "$R/times.txt"
}

ALL='{"rd": 1, "fold": 1, "hpre": 1}'
rt w0 '{}' && [ -f "$R/w0.json" ] || { tar -C "$OUT" -czf "$OUT/res.tgz" res; exit 5; }
for i in $(seq 1 "${N:-2}"); do
  rt a$i '{}'
  rt r$i '{"rd": 1}'
  rt f$i '{"fold": 1}'
  rt h$i '{"hpre": 1}'
  rt x$i "$ALL"
done
rt sk1 '{"skip": 1}'
rt xsk1 '{"rd": 1, "fold": 1, "hpre": 1, "skip": 1}'
rt longx "$ALL" --param drivers=js,python
BUDGET=$((BUDGET + 20)) rt k16x "$ALL" --k 16
tar -C "$OUT" -czf "$OUT/res.tgz" res
