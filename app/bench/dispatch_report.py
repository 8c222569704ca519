"""The "dispatch" section of a results file: validation, text tables and CSV rows (pure stdlib).

Registered with app.report at import time, so ``report.validate``, ``format_tables`` and ``to_csv``
(used by the page, by ``build.py bench`` and by the tests) all know the section.

Fields (µs throughout; the first four keys are the stable schema, the rest are additions):
  rows[]        one per (mode, dtype, driver, n): per_dispatch_us {median, ci95: [lo, hi]} over `reps`
                repetitions of total/N (bootstrap percentile CI, seeded), and total_us_median
  fits[]        one per (mode, dtype, driver): least squares of the per-N median total time against N:
                slope_us (cost of one more dispatch), intercept_us (fixed cost: the final await),
                r2, points, slope_ci95 (bootstrap over repetitions at each N)
  naive_over_sequential  naive slope / sequential slope, f32 and Python driver: how many times the
                naive method (submit + await per dispatch) overstates one dispatch's cost
  unsupported[] {dtype, reason}: dtypes this adapter cannot run (never faked)
  driver_split[] {mode, dtype, python_slope_us, js_slope_us, ffi_us_per_dispatch, ffi_ci95}:
                Pyodide FFI cost per dispatch = Python-driven slope − JS-driven slope
  gpu           {status: measured|unsupported, reason?, quantized, rows[], fits[]}: one_pass timed by
                timestampWrites at the pass's beginning and end (driver "gpu")
  ladder[]      {step, us_per_dispatch, note}: naive, sequential, one_encoder, one_pass, GPU time (f32)
  checks[]      {dtype, dispatches, expected, got, ok}: counter buffers read back after the run
  readback      (ms) how late the page learns that a pass of ~3 ms has finished (app/bench/readback.py):
                {method, dispatches, expected_gpu_ms, reps, every_us, lead_ms, unsupported[], strategies[]:
                {strategy, trials, wall_ms, gpu_ms, overhead_ms ({median, ci95, p90} or None without
                timestamps), pokes, saves_ms}, one_dispatch[]: the same rows for none, submit and write
                with a pass of ONE dispatch}, or {skipped: why}
  schedule, kernel, timing, elapsed_s, analysis_s, gpu_errors, partial/partial_reason (a stopped run)
"""
from __future__ import annotations

from app import report
from app.report import fmt, is_num, need, need_keys, table

MODES = ("naive", "sequential", "one_encoder", "one_pass")
DRIVERS = ("python", "js", "gpu")
LADDER = ("naive", "sequential", "one_encoder", "one_pass")


# ------------------------------------------------------------------------------------------ validation
def _need_str(obj, key, where, allowed=None):
    v = obj[key]
    need(isinstance(v, str) and v != "", f"{where}.{key}", f"expected a non-empty string, got {v!r}")
    if allowed is not None:
        need(v in allowed, f"{where}.{key}", f"{v!r} is not one of {', '.join(allowed)}")


def _need_num(obj, key, where):
    need(is_num(obj[key]), f"{where}.{key}", f"expected a number, got {obj[key]!r}")


def _need_list(sec, key, where):
    need(isinstance(sec[key], list), f"{where}.{key}", f"expected a list, got {type(sec[key]).__name__}")
    return sec[key]


def validate_row(row, where: str) -> None:
    need_keys(row, ("mode", "dtype", "driver", "n", "per_dispatch_us", "reps"), where)
    _need_str(row, "mode", where, MODES)
    _need_str(row, "dtype", where)
    _need_str(row, "driver", where, DRIVERS)
    for k in ("n", "reps"):
        v = row[k]
        need(isinstance(v, int) and not isinstance(v, bool) and v >= 1, f"{where}.{k}",
             f"expected a positive integer, got {v!r}")
    pd = row["per_dispatch_us"]
    need_keys(pd, ("median", "ci95"), f"{where}.per_dispatch_us")
    _need_num(pd, "median", f"{where}.per_dispatch_us")
    ci = pd["ci95"]
    need(isinstance(ci, list) and len(ci) == 2 and all(is_num(x) for x in ci), f"{where}.per_dispatch_us.ci95",
         f"expected [low, high] numbers, got {ci!r}")
    need(ci[0] <= ci[1], f"{where}.per_dispatch_us.ci95", f"low {ci[0]} exceeds high {ci[1]}")


def validate_fit(fit, where: str) -> None:
    need_keys(fit, ("mode", "dtype", "driver", "slope_us", "intercept_us", "r2"), where)
    _need_str(fit, "mode", where, MODES)
    _need_str(fit, "dtype", where)
    _need_str(fit, "driver", where, DRIVERS)
    for k in ("slope_us", "intercept_us", "r2"):
        _need_num(fit, k, where)
    ci = fit.get("slope_ci95")
    need(ci is None or (isinstance(ci, list) and len(ci) == 2 and all(is_num(x) for x in ci)),
         f"{where}.slope_ci95", f"expected [low, high] numbers, got {ci!r}")


def validate(sec, where: str) -> None:
    need_keys(sec, ("rows", "fits", "naive_over_sequential", "unsupported"), where)
    for i, row in enumerate(_need_list(sec, "rows", where)):
        validate_row(row, f"{where}.rows[{i}]")
    for i, fit in enumerate(_need_list(sec, "fits", where)):
        validate_fit(fit, f"{where}.fits[{i}]")
    r = sec["naive_over_sequential"]
    # None only with a stated reason: a stopped run, or a run that could not fit naive/sequential
    need(is_num(r) or (r is None and (sec.get("partial") or sec.get("naive_over_sequential_note"))),
         f"{where}.naive_over_sequential", f"expected a number, got {r!r}")
    for i, u in enumerate(_need_list(sec, "unsupported", where)):
        need_keys(u, ("dtype", "reason"), f"{where}.unsupported[{i}]")
        _need_str(u, "dtype", f"{where}.unsupported[{i}]")
        _need_str(u, "reason", f"{where}.unsupported[{i}]")
    gpu = sec.get("gpu")
    if gpu is not None:
        need_keys(gpu, ("status",), f"{where}.gpu")
        for i, row in enumerate(gpu.get("rows") or []):
            validate_row(row, f"{where}.gpu.rows[{i}]")
        for i, fit in enumerate(gpu.get("fits") or []):
            validate_fit(fit, f"{where}.gpu.fits[{i}]")
    rb = sec.get("readback")
    if rb is not None:
        need(isinstance(rb, dict), f"{where}.readback", "expected an object")
        if "skipped" not in rb:
            for i, r in enumerate(_need_list(rb, "strategies", f"{where}.readback")):
                at = f"{where}.readback.strategies[{i}]"
                _need_str(r, "strategy", at)
                need_keys(r, ("wall_ms", "overhead_ms"), at)
                need(isinstance(r["wall_ms"], dict) and is_num(r["wall_ms"].get("median")), f"{at}.wall_ms",
                     "expected {median, ci95, p90}")


# ------------------------------------------------------------------------------------------ derived views
def _fit(fits, mode, dtype, driver):
    return next((f for f in fits if (f["mode"], f["dtype"], f["driver"]) == (mode, dtype, driver)), None)


def ladder(sec: dict, dtype: str = "f32") -> list[tuple[str, float | None, str]]:
    """[(step, µs per dispatch or None, note)]: the slopes from most to least submission overhead."""
    out = []
    for mode in LADDER:
        f = _fit(sec.get("fits", []), mode, dtype, "python")
        out.append((mode, f["slope_us"] if f else None, "" if f else "not measured"))
    gpu = sec.get("gpu") or {}
    f = _fit(gpu.get("fits") or [], "one_pass", dtype, "gpu")
    if f:
        note = "timestamps quantized to 100 µs: coarse" if gpu.get("quantized") else "timestamp queries"
        out.append(("GPU time", f["slope_us"], note))
    else:
        out.append(("GPU time", None, gpu.get("reason") or "unsupported here"))
    return out


def series_summary(sec: dict) -> list[list]:
    """One line per series: largest-N per-dispatch median and CI, and the fit."""
    rows = list(sec.get("rows", [])) + list((sec.get("gpu") or {}).get("rows") or [])
    fits = list(sec.get("fits", [])) + list((sec.get("gpu") or {}).get("fits") or [])
    last = {}
    for r in rows:
        k = (r["mode"], r["dtype"], r["driver"])
        if k not in last or r["n"] > last[k]["n"]:
            last[k] = r
    out = []
    for k, r in last.items():
        f = _fit(fits, *k)
        pd = r["per_dispatch_us"]
        out.append([*k, r["n"], f"{fmt(pd['median'])} [{fmt(pd['ci95'][0])}, {fmt(pd['ci95'][1])}]", r["reps"],
                    with_ci(f["slope_us"], f.get("slope_ci95")) if f else "—", fmt(f["intercept_us"]) if f else "—",
                    fmt(f["r2"], 4) if f else "—"])
    return out


def readback_rows(sec: dict, key: str = "strategies") -> list[list]:
    """One line per readback strategy (key "one_dispatch": those of the one-dispatch pass): overhead ms median
    [95% CI] and p90, saving against none, wall, pokes."""
    rb = sec.get("readback") or {}
    out = []
    for r in rb.get(key) or []:
        o = r.get("overhead_ms")
        out.append([r["strategy"], with_ci(o["median"], o["ci95"]) if o else "unsupported here",
                    fmt(o["p90"]) if o else "—", fmt(r.get("saves_ms")), fmt(r["wall_ms"]["median"]),
                    fmt(r["pokes"]), r["trials"]])
    return out


READBACK_HEAD = ["strategy", "overhead ms [95% CI]", "p90 ms", "saves ms", "wall ms", "pokes", "trials"]


def readback_caption(sec: dict) -> str:
    rb = sec.get("readback") or {}
    if "skipped" in rb:
        return f"Readback latency: not measured ({rb['skipped']})"
    return (f"Readback latency (ms after a pass of {rb.get('dispatches')} dispatches, ~{fmt(rb.get('expected_gpu_ms'))}"
            f" ms of GPU time, ends until mapAsync resolves; overhead = wall − GPU time)")


def with_ci(value, ci) -> str:
    return fmt(value) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "")


# ------------------------------------------------------------------------------------------ text + csv
def format_section(sec: dict) -> str:
    parts = ["Dispatch cost (µs; per-dispatch = total/N, median [bootstrap 95% CI] over repetitions;"
             " slope/intercept/r² = least-squares fit of total time against N)"]
    if sec.get("partial"):
        parts.append(f"PARTIAL: {sec.get('partial_reason', 'the run stopped early')}")
    parts.append(table(["mode", "dtype", "driver", "N", "per-dispatch µs at N", "reps", "slope µs [95% CI]",
                        "intercept µs", "r²"], series_summary(sec)))
    lad = ladder(sec)
    parts += ["", "Ladder (f32, Python driver; µs per dispatch = slope)",
              table(["step", "µs/dispatch", "note"], [[s, fmt(v), note] for s, v, note in lad])]
    split = sec.get("driver_split") or []
    if split:
        parts += ["", "Driver split (FFI cost per dispatch = Python slope − JS slope)",
                  table(["mode", "dtype", "python µs", "js µs", "ffi µs/dispatch [95% CI]"],
                        [[d["mode"], d["dtype"], fmt(d["python_slope_us"]), fmt(d["js_slope_us"]),
                          with_ci(d["ffi_us_per_dispatch"], d.get("ffi_ci95"))] for d in split])]
    if sec.get("readback"):
        parts += ["", readback_caption(sec)]
        if readback_rows(sec):
            parts.append(table(READBACK_HEAD, readback_rows(sec)))
        if readback_rows(sec, "one_dispatch"):
            parts += ["The same wait for a pass of one dispatch (the naive round trip)",
                      table(READBACK_HEAD, readback_rows(sec, "one_dispatch"))]
    r = sec.get("naive_over_sequential")
    parts += ["", f"naive_over_sequential (f32, Python driver: naive slope / sequential slope): "
                  f"{fmt(r) + '×' if r is not None else 'not measured'}"]
    for u in sec.get("unsupported", []):
        parts.append(f"{u['dtype']}: unsupported here ({u['reason']})")
    for c in sec.get("checks", []):
        if not c.get("ok"):
            parts.append(f"CHECK FAILED for {c.get('dtype')}: buffer holds {c.get('got')}, expected {c.get('expected')}")
    sched = sec.get("schedule") or {}
    if sched.get("naive_note"):
        parts.append(f"note: {sched['naive_note']}")
    return "\n".join(parts)


CSV_HEADER = ["kind", "mode", "dtype", "driver", "n", "median_us", "ci95_lo_us", "ci95_hi_us", "reps",
              "slope_us", "intercept_us", "r2", "value", "reason"]
# fit rows put the slope's CI in ci95_lo_us/ci95_hi_us; ffi rows put the FFI cost's CI there; readback_overhead
# rows: mode = the strategy, median/CI = the readback overhead, value = the median wall time (µs)


def csv_rows(sec: dict) -> list[list]:
    out = [CSV_HEADER]
    gpu = sec.get("gpu") or {}
    for kind, rows in (("row", sec.get("rows", [])), ("gpu_row", gpu.get("rows") or [])):
        for r in rows:
            pd = r["per_dispatch_us"]
            out.append([kind, r["mode"], r["dtype"], r["driver"], r["n"], pd["median"], *pd["ci95"], r["reps"],
                        "", "", "", "", ""])
    for kind, fits in (("fit", sec.get("fits", [])), ("gpu_fit", gpu.get("fits") or [])):
        for f in fits:
            lo, hi = f.get("slope_ci95") or ("", "")
            out.append([kind, f["mode"], f["dtype"], f["driver"], "", "", lo, hi, "", f["slope_us"],
                        f["intercept_us"], f["r2"], "", ""])
    for d in sec.get("driver_split") or []:
        lo, hi = d.get("ffi_ci95") or ("", "")
        out.append(["ffi", d["mode"], d["dtype"], "python-js", "", "", lo, hi, "", "", "", "",
                    d["ffi_us_per_dispatch"], ""])
    out.append(["naive_over_sequential", "", "f32", "python", "", "", "", "", "", "", "", "",
                sec.get("naive_over_sequential"), ""])
    for r in (sec.get("readback") or {}).get("strategies") or []:
        o = r.get("overhead_ms")
        us = [round(1000 * v, 1) for v in (o["median"], *o["ci95"])] if o else ["", "", ""]
        out.append(["readback_overhead", r["strategy"], "f32", "js", "", *us, r["trials"], "", "", "",
                    round(1000 * r["wall_ms"]["median"], 1), "" if o else "unsupported here"])
    for u in sec.get("unsupported", []):
        out.append(["unsupported", "", u["dtype"], "", "", "", "", "", "", "", "", "", "", u["reason"]])
    return out


report.section("dispatch", validate, format_section, csv_rows)
