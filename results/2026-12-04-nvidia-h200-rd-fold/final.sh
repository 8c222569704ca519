#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-rd-fold/3-final (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-rd-fold/final.sh
# 1. A/B of the default path before and after this session's change to it (the norm weights loaded before the
#    residual read): $DIST has this tree's app/ and wgsl/; $DIST_OLD the same with app/llm/resident.py and
#    wgsl/resident.wgsl of commit 1d9ae88 in ab-old/ (untracked,
#    made with `git show 1d9ae88:app/llm/resident.py > ab-old/resident.py` and the same for the WGSL).  Interleaved, 128 tokens, resident, JS.
# 2. The plan runs (both prompts, gpu_loop and resident, both drivers) and the compare suite, with the defaults.
set -u
R=$OUT/res; mkdir -p "$R"
cp -r app wgsl static index.html "$DIST/" && cp gpu_pyscript.json "$DIST/pyscript.json" || exit 4
H=results/2026-12-04-nvidia-h200-rd-fold
DIST_OLD=$DIST.old; rm -rf "$DIST_OLD"; cp -r "$DIST" "$DIST_OLD" &&
  cp $H/ab-old/resident.py "$DIST_OLD/app/llm/resident.py" && cp $H/ab-old/resident.wgsl "$DIST_OLD/wgsl/resident.wgsl" || exit 4
B=(python3 build.py bench --browser "$CHROMIUM" --browser-flags "$GPU_FLAGS")
LONG=(--suite amortize --param skip_isolation=1 --param skip_per_dispatch=1 --max-new-tokens 128 --runs 3 --k 8)

line() {  # file -> one line per plan row: plan driver tok/s gpu_ms wall_ms stopped tokens hash
  python3 - "$1" <<'PY'
import json, os, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(os.path.basename(sys.argv[1]), "no JSON:", e); sys.exit()
rows = (d.get("amortize") or {}).get("plans", []) + (d.get("compare") or {}).get("engines", [])
for p in rows:
    t = p.get("generated_token_ids") or []
    print(os.path.basename(sys.argv[1]), p.get("plan") or p.get("engine"), p.get("driver") or p.get("mode"),
          "tok/s", p.get("decode_tok_per_s"), p.get("decode_tok_per_s_ci95"), "gpu_ms", p.get("gpu_ms_per_token"),
          "ms", p.get("ms_per_token"), p.get("stopped"), len(t), hash(tuple(t)) % 100000,
          p.get("error") or p.get("unsupported") or "")
if "error" in d:
    print(os.path.basename(sys.argv[1]), "error:", str(d["error"])[:300])
PY
}
go() {  # name timeout args...
  local n=$1 to=$2; shift 2
  timeout "$to" "${B[@]}" --json "$R/$n.json" "$@" > "$R/$n.txt" 2>&1
  line "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"
}
go w0 150 --dist "$DIST" "${LONG[@]}" --param plans=resident --param drivers=js --prompt "Once upon a time"
for i in 1 2 3; do
  go old$i 150 --dist "$DIST_OLD" "${LONG[@]}" --param plans=resident --param drivers=js --prompt "Once upon a time"
  go new$i 150 --dist "$DIST" "${LONG[@]}" --param plans=resident --param drivers=js --prompt "Once upon a time"
done
go long 200 --dist "$DIST" "${LONG[@]}" --param plans=gpu_loop,resident --param drivers=js,python --prompt "Once upon a time"
go main 200 --dist "$DIST" "${LONG[@]}" --param plans=gpu_loop,resident --param drivers=js,python
go compare 240 --dist "$DIST" --suite compare --max-new-tokens 32 --runs 3
tar -C "$OUT" -czf "$OUT/res.tgz" res
