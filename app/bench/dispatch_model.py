"""The dispatch benchmark's schedule and analysis: pure Python, shared by the page and the unit tests.

A *series* is (mode, dtype, driver); driver "gpu" marks the one_pass series timed by timestamp queries.
A *point* is a series at one N.  The suite visits every point `rounds` times, each round in a fresh
seeded random order, and takes `reps_per_visit` timed repetitions per visit (after one untimed warm-up
replay).  Spreading a point's repetitions over the whole run and shuffling the order means a slow
stretch of the machine (other processes, thermal drift) lands on all modes alike instead of biasing
whichever mode happened to run then.
"""
from __future__ import annotations

import random
import zlib

from app.bench import stats

MODES = ("naive", "sequential", "one_encoder", "one_pass")
DTYPES = ("f32", "f16", "i32")
PY, JS, GPU = "python", "js", "gpu"
JS_MODES = ("sequential", "one_pass")           # the driver split: same loops, encoded by static/replay.js

# naive mode awaits the GPU after every dispatch; its N stops where the schedule's naive part would
# exceed naive_budget_s at the await cost measured before the run (never below naive_min_cap).
FULL = {"n": [2 ** k for k in range(11)], "reps": 20, "rounds": 4, "naive_budget_s": 120, "naive_min_cap": 64}
QUICK = {"n": [1, 4, 16, 64, 256, 1024], "reps": 20, "rounds": 2, "naive_budget_s": 6, "naive_min_cap": 16}
NAIVE_NOTE = ("naive mode awaits the GPU after every dispatch ({await_us:.0f} µs per await measured here), so "
              "to stay within its {budget:.0f} s budget it stops at N={cap}; its cost grows linearly in N "
              "(every dispatch is its own round trip), which the fit over N<={cap} captures")
SEED = 7
F16_WRAP = 1025        # the f16 kernel counts modulo 1025 (f16 holds integers exactly only up to 2048)


def settings(quick: bool) -> dict:
    base = QUICK if quick else FULL
    return {**base, "n": list(base["n"]), "reps_per_visit": base["reps"] // base["rounds"], "seed": SEED,
            "warmup_per_visit": 1, "quick": bool(quick), "naive_n_max": max(base["n"])}


def cap_naive(cfg: dict, await_us: float, n_dtypes: int) -> dict:
    """Set cfg["naive_n_max"]: the largest N whose naive points fit the budget (see FULL/QUICK)."""
    cap = min(cfg["n"])
    for n in sorted(cfg["n"]):
        cost_s = n_dtypes * cfg["reps"] * await_us * sum(m for m in cfg["n"] if m <= n) / 1e6
        if n <= cfg["naive_min_cap"] or cost_s <= cfg["naive_budget_s"]:
            cap = n
        else:
            break
    cfg = {**cfg, "naive_n_max": cap, "naive_await_us": round(await_us, 1)}
    if cap < max(cfg["n"]):
        cfg["naive_note"] = NAIVE_NOTE.format(await_us=await_us, budget=cfg["naive_budget_s"], cap=cap)
    return cfg


def series_list(dtypes, timestamps: bool) -> list[tuple[str, str, str]]:
    out = []
    for dtype in dtypes:
        out += [(m, dtype, PY) for m in MODES]
        out += [(m, dtype, JS) for m in JS_MODES]
        if timestamps:
            out.append(("one_pass", dtype, GPU))
    return out


def points(series, cfg: dict) -> list[tuple[tuple[str, str, str], int]]:
    pts = []
    for s in series:
        cap = cfg["naive_n_max"] if s[0] == "naive" else max(cfg["n"])
        pts += [(s, n) for n in cfg["n"] if n <= cap]
    return pts


def visits(pts, cfg: dict) -> list[tuple[int, tuple, int]]:
    """[(round, series, n), ...]: every point once per round, each round shuffled with a seeded RNG."""
    rng = random.Random(cfg["seed"])
    out = []
    for r in range(cfg["rounds"]):
        order = list(pts)
        rng.shuffle(order)
        out += [(r, s, n) for s, n in order]
    return out


def visit_cost(series, n: int, cfg: dict) -> float:
    """A rough relative cost (µs on a software adapter) for an honest progress bar."""
    if series[0] == "naive":                 # its warm-up is a single dispatch (see dispatch.py)
        return (cfg["reps_per_visit"] * n + 1) * cfg.get("naive_await_us", 2000.0)
    return (cfg["reps_per_visit"] + cfg["warmup_per_visit"]) * (n * 60.0 + 2000.0)


def expected_value(dtype: str, dispatches: int) -> int:
    """What every element of the counter buffer holds after `dispatches` runs of the kernel."""
    return dispatches % F16_WRAP if dtype == "f16" else dispatches


# ------------------------------------------------------------------------------------------ analysis
def _key(series):
    mode, dtype, driver = series
    return (DTYPES.index(dtype) if dtype in DTYPES else 9, [PY, JS, GPU].index(driver), MODES.index(mode))


def summarize(samples: dict, boots: dict | None = None) -> tuple[list, list]:
    """samples: {series: {n: [total µs per repetition, ...]}} → (rows, fits) in the results schema.
    boots, when given, receives each fitted series' bootstrap slope distribution (for derived CIs)."""
    rows, fits = [], []
    for series in sorted(samples, key=_key):
        mode, dtype, driver = series
        by_n = {n: v for n, v in samples[series].items() if v}
        for n in sorted(by_n):
            per = [t / n for t in by_n[n]]
            lo, hi = stats.bootstrap_ci(per)
            rows.append({"mode": mode, "dtype": dtype, "driver": driver, "n": n,
                         "per_dispatch_us": {"median": stats.median(per), "ci95": [lo, hi]},
                         "total_us_median": stats.median(by_n[n]), "reps": len(per)})
        if len(by_n) >= 2:
            ns = sorted(by_n)
            slope, intercept, r2 = stats.linfit(ns, [stats.median(by_n[n]) for n in ns])
            boot = stats.bootstrap_slopes(by_n, seed=series_seed(series))
            fits.append({"mode": mode, "dtype": dtype, "driver": driver, "slope_us": slope,
                         "intercept_us": intercept, "r2": r2, "points": len(ns),
                         "slope_ci95": list(stats.interval(boot))})
            if boots is not None:
                boots[series] = boot
    return rows, fits


def series_seed(series) -> int:
    """A fixed, distinct bootstrap seed per series (distinct, so two series' resamples are independent)."""
    return zlib.crc32("/".join(series).encode())



def find_fit(fits, mode: str, dtype: str, driver: str):
    for f in fits:
        if (f["mode"], f["dtype"], f["driver"]) == (mode, dtype, driver):
            return f
    return None


def driver_split(fits, boots: dict | None = None) -> list[dict]:
    """FFI cost per dispatch = Python-driven slope − JS-driven slope, for the same mode and dtype.
    With the slopes' bootstrap distributions (boots, from summarize) it also gives a 95% CI."""
    out = []
    for f in fits:
        if f["driver"] != PY or f["mode"] not in JS_MODES:
            continue
        j = find_fit(fits, f["mode"], f["dtype"], JS)
        if j is not None:
            d = {"mode": f["mode"], "dtype": f["dtype"], "python_slope_us": f["slope_us"],
                 "js_slope_us": j["slope_us"], "ffi_us_per_dispatch": f["slope_us"] - j["slope_us"]}
            bp, bj = (boots or {}).get((f["mode"], f["dtype"], PY)), (boots or {}).get((f["mode"], f["dtype"], JS))
            if bp and bj:     # independent resamples of the two slopes (distinct seeds), paired by index
                d["ffi_ci95"] = list(stats.interval([a - b for a, b in zip(bp, bj)]))
            out.append(d)
    return out


def ratio(fits, dtype: str = "f32"):
    naive, seq = find_fit(fits, "naive", dtype, PY), find_fit(fits, "sequential", dtype, PY)
    if naive is None or seq is None:
        return None
    return stats.naive_over_sequential(naive["slope_us"], seq["slope_us"])


def quantized(raw_ns) -> bool | None:
    """Chrome rounds timestamps to 100 µs unless WebGPU developer features are on.  Raw nanosecond
    readings that are all multiples of 100 000 are quantized (by chance: ~1e-5 per reading)."""
    raw = [int(t) for t in raw_ns]
    if len(raw) < 4:
        return None
    return all(t % 100_000 == 0 for t in raw)


def assemble(samples, cfg, unsupported, has_ts, raw_ts, checks, elapsed) -> dict:
    """The "dispatch" section from raw samples {series: {n: [µs...]}} (GPU series: driver "gpu")."""
    cpu = {s: v for s, v in samples.items() if s[2] != GPU}
    gpu_samples = {s: v for s, v in samples.items() if s[2] == GPU}
    boots: dict = {}
    rows, fits = summarize(cpu, boots)
    if has_ts and raw_ts and not any(raw_ts):
        gpu = {"status": "unsupported", "reason": "timestamp queries resolved to zeros", "rows": [], "fits": []}
    elif has_ts:
        grows, gfits = summarize(gpu_samples)
        gpu = {"status": "measured", "quantized": quantized(raw_ts), "rows": grows, "fits": gfits,
               "method": "one_pass with timestampWrites at the beginning and end of the pass"}
    else:
        gpu = {"status": "unsupported", "reason": "adapter lacks timestamp-query", "rows": [], "fits": []}
    r = ratio(fits)
    split = driver_split(fits, boots)
    sec = {"rows": rows, "fits": fits, "naive_over_sequential": r, "unsupported": unsupported,
           "driver_split": split, "gpu": gpu, "checks": checks,
           "schedule": cfg,
           "timing": "performance.now() around replay + one await onSubmittedWorkDone (naive awaits each)",
           "elapsed_s": round(elapsed, 2)}
    if r is None:
        sec["naive_over_sequential_note"] = "not measured (needs naive and sequential fits for f32, Python driver)"
    sec["ladder"] = [{"step": s, "us_per_dispatch": v, "note": note} for s, v, note in _ladder(sec)]
    return sec


def _ladder(sec):
    from app.bench.dispatch_report import ladder
    return ladder(sec)
