"""One line per plan row of a bench JSON, for the device scripts' summary.txt:
file plan driver tok/s [CI] gpu_ms wall_ms stopped tokens hash(ids) % 100000 error, gaps (see gaps()), pokes,
the rate after the first delivery.
Usage: python3 results/summarize.py FILE.json"""
import json
import os
import sys



def gaps(p):
    """Per timed run (block loops with timestamps): GPU idle between blocks, and the rest of the wall time (before
    the first block's pass and after the last one's), both ms: "gaps A/B …"."""
    out = []
    for r in p.get("block_timing_runs") or []:
        g, gpu, read = r.get("block_gpu_gap_ms"), r.get("block_gpu_ms"), r.get("block_read_ms")
        if isinstance(g, list) and isinstance(gpu, list) and read:
            out.append(f"{sum(g):.2f}/{read[-1] - sum(g) - sum(gpu):.2f}")
    return "gaps " + " ".join(out) if out else ""


def first_sent(p):
    """Per timed run: when the first decode block was submitted, ms after decode timing started ("sent0 …")."""
    out = [f"{r['block_sent_ms'][0]:.2f}" for r in p.get("block_timing_runs") or [] if r.get("block_sent_ms")]
    return "sent0 " + " ".join(out) if out else ""


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
          hash(tuple(t)) % 100000, p.get("error") or p.get("unsupported") or "", gaps(p),
          f"pokes {p['pokes_runs']}" if p.get("poke_us") else "", first_sent(p),
          f"after1st {p['decode_after_first_tok_per_s']}" if p.get("decode_after_first_tok_per_s") else "")
for e in (d.get("compare") or {}).get("engines", []):
    print(name, e.get("engine"), e.get("mode"), e.get("threads"), "tok/s", e.get("decode_tok_per_s"), e.get("decode_ci"),
          "from prefill", e.get("decode_from_prefill_tok_per_s"), "ttft", e.get("ttft_ms"), "agree", e.get("agree_prefix"),
          e.get("error") or "")
sf = (d.get("env") or {}).get("safety")
if sf:                                                          # the safety probe (from the fifteenth session on)
    print(name, "safety", sf.get("out_of_bounds_read") or sf.get("status"), "|", sf.get("workgroup_memory_before_write"))
kp = (d.get("amortize") or {}).get("kernel_profile")
if kp:
    print(name, "profile", json.dumps(kp.get("runs") or kp.get("status")))
if "error" in d:
    print(name, "error:", str(d["error"])[:300])
