#!/usr/bin/env bash
# The device-side command of results/2026-12-04-nvidia-h200-rd-fold/4-rope (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-04-nvidia-h200-rd-fold/rope.sh
# Interleaved A/B of the Q|K|V step's RoPE pair asked for before its matvec: $DIST has this tree's app/ and
# wgsl/; $DIST_OLD the same with wgsl/resident.wgsl of commit c0a29ad in ab-old/ (untracked, made with
# `git show c0a29ad:wgsl/resident.wgsl > ab-old/resident.wgsl`).  128 tokens, resident, JS; then the plan run.
set -u
R=$OUT/res; mkdir -p "$R"
cp -r app wgsl static index.html "$DIST/" && cp gpu_pyscript.json "$DIST/pyscript.json" || exit 4
H=results/2026-12-04-nvidia-h200-rd-fold
DIST_OLD=$DIST.old; rm -rf "$DIST_OLD"; cp -r "$DIST" "$DIST_OLD" &&
  cp $H/ab-old/resident.wgsl "$DIST_OLD/wgsl/resident.wgsl" || exit 4
B=(python3 build.py bench --browser "$CHROMIUM" --browser-flags "$GPU_FLAGS")
LONG=(--suite amortize --param skip_isolation=1 --param skip_per_dispatch=1 --max-new-tokens 128 --runs 3 --k 8
      --prompt "Once upon a time")
line() {  # file -> one line per plan row: plan driver tok/s [CI] gpu_ms wall_ms stopped tokens hash
  python3 - "$1" <<'PY'
import json, os, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(os.path.basename(sys.argv[1]), "no JSON:", e); sys.exit()
for p in (d.get("amortize") or {}).get("plans", []):
    t = p.get("generated_token_ids") or []
    print(os.path.basename(sys.argv[1]), p.get("plan"), p.get("driver"), "tok/s", p.get("decode_tok_per_s"),
          p.get("decode_tok_per_s_ci95"), "gpu_ms", p.get("gpu_ms_per_token"), "ms", p.get("ms_per_token"),
          p.get("stopped"), len(t), hash(tuple(t)) % 100000, p.get("error") or p.get("unsupported") or "")
if "error" in d:
    print(os.path.basename(sys.argv[1]), "error:", str(d["error"])[:300])
PY
}
go() {  # name dist args...
  local n=$1 dist=$2; shift 2
  timeout 200 "${B[@]}" --dist "$dist" --json "$R/$n.json" "${LONG[@]}" "$@" > "$R/$n.txt" 2>&1
  line "$R/$n.json" >> "$R/summary.txt"; echo "$n $SECONDS s" >> "$R/times.txt"
}
go w0 "$DIST" --param plans=resident --param drivers=js
for i in 1 2 3 4; do
  go old$i "$DIST_OLD" --param plans=resident --param drivers=js
  go new$i "$DIST" --param plans=resident --param drivers=js
done
go long "$DIST" --param plans=gpu_loop,resident --param drivers=js,python
tar -C "$OUT" -czf "$OUT/res.tgz" res
