"""One line per plan row of a bench JSON, for the device scripts' summary.txt:
file plan driver tok/s [CI] gpu_ms wall_ms stopped tokens hash(ids) % 100000 error.
Usage: python3 results/summarize.py FILE.json"""
import json
import os
import sys

name = os.path.basename(sys.argv[1])
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:                                          # a run that died wrote no JSON: say so, go on
    print(name, "no JSON:", e)
    sys.exit()
for p in (d.get("amortize") or {}).get("plans", []):
    t = p.get("generated_token_ids") or []
    print(name, p.get("plan"), p.get("driver"), "tok/s", p.get("decode_tok_per_s"), p.get("decode_tok_per_s_ci95"),
          "gpu_ms", p.get("gpu_ms_per_token"), "ms", p.get("ms_per_token"), p.get("stopped"), len(t),
          hash(tuple(t)) % 100000, p.get("error") or p.get("unsupported") or "")
if "error" in d:
    print(name, "error:", str(d["error"])[:300])
