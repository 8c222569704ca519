"""The "amortize" section: built from raw runs, validated, printed as text tables, exported as CSV.

Pure standard library (stats is too), so the page, `build.py bench` and the CPython tests share it.
Registered with app.report at import time (one line at the bottom of app/report.py imports it).

Section shape (keys the issue asks for first, extras after):
  plans:     [{plan, driver, dispatches_per_token, submits_per_token, readbacks_per_token,
               decode_tok_per_s, ms_per_token, generated_token_ids,
               + mode, runs, decode_tok_per_s_ci95, gpu_ms_per_token, declared_dispatches_per_token,
                 dispatch_count_ok, overhead_share, per_dispatch_us, tokens_match_op_by_op, deterministic,
                 ttft_ms, stopped, decode_after_first_tok_per_s (the rate after the first delivery; with
                 decode_after_first_ci95 and decode_after_first_runs),
                 k (gpu_loop, resident)}]  or {plan, driver, unsupported: reason}
  isolation: {k, ms, slope_us, sequential_per_dispatch_us, + series, checks, gpu_ms, …}
  per_dispatch: {sequential_us, one_encoder_us, one_pass_us, by_driver, fits, source}
  config, all_tokens_identical, python_vs_js
"""
from __future__ import annotations

from app import report
from app.bench import stats
from app.report import fmt, is_num, need, need_keys, table

DEFAULT_PROMPT = "The capital of France is"
PLAN_KEYS = ("plan", "driver", "dispatches_per_token", "submits_per_token", "readbacks_per_token",
             "decode_tok_per_s", "ms_per_token", "generated_token_ids")
ISO_KEYS = ("k", "ms", "slope_us", "sequential_per_dispatch_us")
MODES = ("sequential", "one_encoder", "one_pass")


# ------------------------------------------------------------------------------------------ building
def per_dispatch(fits: list[dict], source: str) -> dict:
    """µs per dispatch by mode and driver from the dispatch model's fits (f32 counter kernel)."""
    by = {d: {m: _slope(fits, m, d) for m in MODES} for d in ("python", "js")}
    return {"sequential_us": by["python"]["sequential"], "one_encoder_us": by["python"]["one_encoder"],
            "one_pass_us": by["python"]["one_pass"], "by_driver": by, "fits": fits, "source": source}


def _slope(fits, mode, driver):
    for f in fits:
        if f["mode"] == mode and f["driver"] == driver:
            return f["slope_us"]
    return None


def _nums(values) -> list[float]:
    return [float(v) for v in values if is_num(v)]


def _median(values):
    v = _nums(values)
    return stats.median(v) if v else None


BLOCK_KEYS = ("block_lengths", "block_sent_ms", "block_read_ms", "block_gpu_ms",   # a block-loop run's record
              "block_gpu_gap_ms")                                                   # (app.llm.gpu_loop.run)


def block_timing(results: list[dict]) -> list[dict]:
    """Per run of a block loop: each block's length, when it was submitted and when its tokens were read back (ms
    after decoding began; blocks discarded after EOS or a cancel too), its GPU time and the GPU's idle time
    between one block's pass and the next one's (from the same timestamps; "unsupported" without
    timestamp-query), which is what tells a slow run's cause apart (a slow GPU, a late submit or a late readback)
    and where wall time goes beyond the GPU's."""
    return [{key: r.get(key) for key in BLOCK_KEYS} for r in results]


def plan_row(plan: str, driver: str, runs: list[dict], per: dict, mode: str, k: int) -> dict:
    """One table row from the generate() results of repeated runs of one plan and driver."""
    first = runs[0]
    rates = _nums(r.get("decode_tok_per_s") for r in runs)
    after = _nums(r.get("decode_after_first_tok_per_s") for r in runs)
    ms = _median(r.get("decode_ms_per_token") for r in runs)
    gpu = _median(r.get("gpu_ms_per_token") for r in runs)
    disp = first["dispatches_per_token"]
    unit = ((per.get("by_driver") or {}).get(driver) or {}).get(mode)
    row = {"plan": plan, "driver": driver, "dispatches_per_token": disp,
           "submits_per_token": first["submits_per_token"], "readbacks_per_token": first["readbacks_per_token"],
           "decode_tok_per_s": stats.median(rates) if rates else None,
           "ms_per_token": ms, "generated_token_ids": list(first["generated_token_ids"]),
           "mode": mode, "runs": len(runs),
           "decode_tok_per_s_ci95": list(stats.bootstrap_ci(rates)) if rates else None,
           "decode_tok_per_s_runs": rates,
           "decode_after_first_tok_per_s": stats.median(after) if after else None,
           "decode_after_first_ci95": list(stats.bootstrap_ci(after)) if after else None,
           "decode_after_first_runs": after,
           "gpu_ms_per_token": gpu if gpu is not None else (first.get("gpu_ms_per_token")
                                                            if isinstance(first.get("gpu_ms_per_token"), str)
                                                            else "unsupported"),
           "declared_dispatches_per_token": first.get("expected_dispatches_per_token"),
           "dispatch_count_ok": all(r["dispatches_per_token"] == r.get("expected_dispatches_per_token") for r in runs),
           "per_dispatch_us": unit,
           "overhead_share": disp * unit / 1000.0 / ms if unit is not None and ms else None,
           "deterministic": all(r["generated_token_ids"] == first["generated_token_ids"] for r in runs),
           "ttft_ms": _median(r.get("ttft_ms") for r in runs), "stopped": first.get("stopped")}
    if plan in ("gpu_loop", "resident"):
        row["k"] = first.get("k", k)
        row["wasted_tokens"] = first.get("wasted_tokens")
        row["blocks"] = first.get("blocks")
        row["ramp"] = first.get("ramp")
        row["depth"] = first.get("depth")
        row["copy_apart"] = first.get("copy_apart")
        row["encode_ahead"] = first.get("encode_ahead")
        row["poke_us"] = first.get("poke_us")
        row["poke_with"] = first.get("poke_with")
        row["gpu_timing"] = first.get("gpu_timing")
        row["tuning"] = first.get("tuning")
        row["pokes_runs"] = [r.get("pokes") for r in runs]
        row["block_timing_runs"] = block_timing(runs)
    return row


def plan_rows(runs: dict, per: dict, mode_of: dict, n_layers: int, k: int, unsupported: dict) -> list[dict]:
    """Rows for every (plan, driver) in runs' order; unsupported plans get a row that says why."""
    rows = []
    for (plan, driver), got in runs.items():
        if plan in unsupported or not got:
            rows.append({"plan": plan, "driver": driver,
                         "unsupported": unsupported.get(plan, "no run finished")})
            continue
        rows.append(plan_row(plan, driver, got, per, mode_of[plan], k))
    ref = next((r["generated_token_ids"] for r in rows if r["plan"] == "op_by_op" and "unsupported" not in r), None)
    for r in rows:
        if "unsupported" not in r:
            r["tokens_match_op_by_op"] = None if ref is None else r["generated_token_ids"] == ref
    return rows


def python_vs_js(rows: list[dict]) -> list[dict]:
    """Per plan: Python-driven ms/token ÷ JS-driven ms/token (goal: within 10%)."""
    ms = {(r["plan"], r["driver"]): r.get("ms_per_token") for r in rows if "unsupported" not in r}
    out = []
    for plan in dict.fromkeys(p for p, _ in ms):
        py, js = ms.get((plan, "python")), ms.get((plan, "js"))
        if py and js:
            out.append({"plan": plan, "python_ms": py, "js_ms": js, "ratio": py / js, "within_10pct": py / js <= 1.1})
    return out


def section(rows: list[dict], iso: dict | None, per: dict, cfg: dict) -> dict:
    ok = [r for r in rows if "unsupported" not in r]
    sec = {"plans": rows, "per_dispatch": per, "config": dict(cfg),
           "all_tokens_identical": bool(ok) and all(r["generated_token_ids"] == ok[0]["generated_token_ids"] for r in ok),
           "python_vs_js": python_vs_js(rows)}
    if iso is not None:
        sec["isolation"] = iso
    best = max(ok, key=lambda r: r["decode_tok_per_s"] or 0, default=None)
    if best is not None:
        sec["best"] = {"plan": best["plan"], "driver": best["driver"], "decode_tok_per_s": best["decode_tok_per_s"]}
    return sec


# ------------------------------------------------------------------------------------------ validation
def validate(sec, where: str) -> None:
    need_keys(sec, ("plans",), where)
    need(isinstance(sec["plans"], list), f"{where}.plans", "expected a list")
    for i, r in enumerate(sec["plans"]):
        w = f"{where}.plans[{i}]"
        if isinstance(r, dict) and "unsupported" in r:
            need_keys(r, ("plan", "driver", "unsupported"), w)
            continue
        need_keys(r, PLAN_KEYS, w)
        for key in ("dispatches_per_token", "submits_per_token", "readbacks_per_token"):
            need(is_num(r[key]) and r[key] >= 0, f"{w}.{key}", f"expected a number ≥ 0, got {r[key]!r}")
        for key in ("decode_tok_per_s", "ms_per_token"):
            need(r[key] is None or is_num(r[key]), f"{w}.{key}", f"expected a number or null, got {r[key]!r}")
        ids = r["generated_token_ids"]
        need(isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in ids),
             f"{w}.generated_token_ids", "expected a list of integer token ids")
    iso = sec.get("isolation")
    if iso is not None:
        need_keys(iso, ISO_KEYS, f"{where}.isolation")
        k, ms = iso["k"], iso["ms"]
        need(isinstance(k, list) and isinstance(ms, list) and len(k) == len(ms) and len(k) >= 2,
             f"{where}.isolation", "k and ms must be lists of the same length (at least 2)")
        need(all(is_num(x) for x in k + ms), f"{where}.isolation", "k and ms must hold numbers")
        need(is_num(iso["slope_us"]), f"{where}.isolation.slope_us", f"expected a number, got {iso['slope_us']!r}")
        s = iso["sequential_per_dispatch_us"]
        need(s is None or is_num(s), f"{where}.isolation.sequential_per_dispatch_us", f"expected a number, got {s!r}")


# ------------------------------------------------------------------------------------------ text + csv
def _ci(r) -> str:
    ci = r.get("decode_tok_per_s_ci95")
    return f"[{fmt(ci[0], 1)}, {fmt(ci[1], 1)}]" if ci else "—"


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _per_tok(x) -> str:
    return fmt(x, 3) if isinstance(x, float) and x != int(x) else str(x)


def plans_table(sec: dict) -> str:
    rows = []
    for r in sec.get("plans", []):
        if "unsupported" in r:
            rows.append([r["plan"], r["driver"], "unsupported here: " + str(r["unsupported"])] + [""] * 10)
            continue
        ok = "yes" if r.get("tokens_match_op_by_op") else ("—" if r.get("tokens_match_op_by_op") is None else "NO")
        rows.append([r["plan"] + (f" K={r['k']}" if "k" in r else ""), r["driver"], _per_tok(r["dispatches_per_token"]),
                     _per_tok(r["submits_per_token"]), _per_tok(r["readbacks_per_token"]),
                     fmt(r["decode_tok_per_s"], 1), _ci(r), fmt(r.get("decode_after_first_tok_per_s"), 1),
                     fmt(r["ms_per_token"]), fmt(r.get("gpu_ms_per_token")),
                     _pct(r.get("overhead_share")), ok, "ok" if r.get("dispatch_count_ok") else "MISMATCH"])
    return table(["plan", "driver", "disp/tok", "submits/tok", "readbacks/tok", "tok/s", "95% CI", "after 1st**",
                  "ms/tok", "GPU ms/tok", "overhead*", "ids = op_by_op", "count"], rows)


def isolation_text(iso: dict) -> str:
    ser = iso.get("series") or {}
    heads = ["k"] + [f"{m} ms" for m in ser]
    rows = [[k] + [fmt(ser[m]["ms"][i], 3) for m in ser] for i, k in enumerate(iso["k"])]
    lines = [f"Isolation: {iso.get('rows')}×{iso.get('cols')} Q4_1 matvec split into k dispatches "
             f"({iso.get('driver', 'python')} driver; all splits identical: {iso.get('all_splits_identical')})",
             table(heads, rows)]
    for m, s in ser.items():
        lines.append(f"  {m}: slope {fmt(s['slope_us'])} µs/dispatch (r² {fmt(s['r2'], 3)})")
    if iso.get("gpu_slope_us") is not None:
        lines.append(f"  GPU (timestamps, one_pass): slope {fmt(iso['gpu_slope_us'])} µs/dispatch")
    lines.append(f"  dispatch suite, same session: sequential {fmt(iso.get('sequential_per_dispatch_us'))} µs, "
                 f"one_pass {fmt(iso.get('one_pass_per_dispatch_us'))} µs per dispatch")
    return "\n".join(lines)


def format_section(sec: dict) -> str:
    cfg = sec.get("config") or {}
    parts = [f"Amortization (prompt {cfg.get('prompt', '?')!r}, {cfg.get('max_new', '?')} new tokens, "
             f"{cfg.get('runs', '?')} runs each; tok/s = median, 95% bootstrap CI over runs)", plans_table(sec),
             "* overhead = dispatches/token × per-dispatch cost of the plan's mode and driver (dispatch suite, this "
             "session) ÷ ms/token: an estimate, it can exceed 100% when the counter kernel's cost is not additive",
             "** decode tok/s after the first delivery: tokens delivered after it ÷ time from it to the last (the compare "
             "suite's definition for every engine); tok/s counts every token from the prefill's end"]
    pj = sec.get("python_vs_js") or []
    if pj:
        parts += ["", "Python-driven vs JS-driven replay (goal: Python within 10% of JS)",
                  table(["plan", "python ms/tok", "js ms/tok", "ratio", "within 10%"],
                        [[p["plan"], fmt(p["python_ms"]), fmt(p["js_ms"]), fmt(p["ratio"], 3),
                          "yes" if p["within_10pct"] else "no"] for p in pj])]
    parts.append(f"all plans gave identical greedy tokens: {sec.get('all_tokens_identical')}")
    if sec.get("isolation"):
        parts += ["", isolation_text(sec["isolation"])]
    return "\n".join(parts)


CSV_HEADER = ["kind", "plan", "driver", "k", "dispatches_per_token", "submits_per_token", "readbacks_per_token",
              "decode_tok_per_s", "ci95_lo", "ci95_hi", "ms_per_token", "gpu_ms_per_token", "overhead_share",
              "tokens_match_op_by_op", "note"]


def csv_rows(sec: dict) -> list[list]:
    out = [CSV_HEADER]
    for r in sec.get("plans", []):
        if "unsupported" in r:
            out.append(["plan", r["plan"], r["driver"]] + [""] * 11 + [r["unsupported"]])
            continue
        ci = r.get("decode_tok_per_s_ci95") or ["", ""]
        out.append(["plan", r["plan"], r["driver"], r.get("k", ""), r["dispatches_per_token"], r["submits_per_token"],
                    r["readbacks_per_token"], r["decode_tok_per_s"], ci[0], ci[1], r["ms_per_token"],
                    r.get("gpu_ms_per_token"), r.get("overhead_share"), r.get("tokens_match_op_by_op"), ""])
    iso = sec.get("isolation")
    if iso:
        for m, s in (iso.get("series") or {"one_pass": {"ms": iso["ms"]}}).items():
            for k, ms in zip(iso["k"], s["ms"]):
                out.append(["isolation", m, iso.get("driver", ""), k, k, "", "", "", "", "", ms, "", "", "", ""])
        out.append(["isolation_slope_us", "one_pass", "", "", "", "", "", "", "", "", iso["slope_us"], "", "", "",
                    f"sequential per-dispatch {iso.get('sequential_per_dispatch_us')} µs"])
    return out


report.section("amortize", validate, format_section, csv_rows)
