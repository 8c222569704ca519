"""Readback latency (part of the dispatch suite): how late the page learns that GPU work has finished.

Every block loop ends by waiting for one readback, and every naive dispatch is one, so this delay is paid once per
answer (and once per dispatch in naive mode) on top of the GPU time.  static/readback.js times the trials; this
module sizes the workload, interleaves the strategies, reads the timestamps and does the statistics.

A trial submits one command buffer: a pass of `dispatches` counter dispatches (sized to about TARGET_MS of GPU
time, so that the wait starts long before the GPU is done, as in a block loop) with timestampWrites around it, and
a 4-byte copy into a MAP_READ buffer; then it awaits mapAsync.  overhead = wall (submit → resolved) − the pass's
GPU time: the submit's way to the GPU plus the readback's way back, less nothing.  Strategies (what the page does
while it waits; static/readback.js): none, submit (an empty submit every EVERY_US, the LLM loop's `poke` with
poke_with=submit), write (a 4-byte writeBuffer every EVERY_US, its `poke` by default), timed (ONE empty submit
LEAD_MS before the pass's expected end), at_end (one empty submit at the expected end).  Chromium's GPU process
looks for finished work after it handles a command flush and otherwise on a timer that each flush restarts (2 ms,
then every 1 ms while work is pending), so these tell apart a flush that polls from a flush that only pushes the
timer back.  `one_dispatch` repeats none, submit and write for a pass of ONE dispatch (the naive round trip): with
pokes that answer at once, its overhead is the submit's and the answer's ways alone.

Without timestamp-query the GPU time is unknown: wall is still reported, overhead and the timed strategies are
"unsupported here".  Pure parts (CPython): order, size, summarize.
"""
from __future__ import annotations

import random

from app.bench import stats

TARGET_MS = 3.0             # GPU time of one trial's pass
PROBE_DISPATCHES = 256      # the calibration pass
EVERY_US = 50               # submit / write: one poke per this many µs at most
LEAD_MS = 1.9               # timed: how long before the expected end its one submit goes
STRATEGIES = ("none", "submit", "write", "timed", "at_end")
TIMED = ("timed", "at_end")  # need the expected GPU time, so timestamps
SHORT = ("none", "submit", "write")   # the same wait for ONE dispatch: the submit's and the answer's ways alone
REPS, QUICK_REPS = 16, 6
SEED = 20261207


def strategy_spec(name: str, expect_ms: float) -> dict:
    """The JS side's description of one strategy."""
    lead = {"timed": LEAD_MS, "at_end": 0.0}.get(name, 0.0)
    return {"strategy": "timed" if name in TIMED else name, "everyUs": EVERY_US, "leadMs": lead,
            "expectMs": float(expect_ms)}


def order(n_strategies: int, reps: int, seed: int = SEED) -> list[list[int]]:
    """[[strategy index, slot], ...]: reps rounds, each every strategy once in a shuffled order; slot = trial
    index (its timestamp pair)."""
    rng, out = random.Random(seed), []
    for _ in range(reps):
        idx = list(range(n_strategies))
        rng.shuffle(idx)
        out += [[i, len(out) + j] for j, i in enumerate(idx)]
    return out


def size(probe_ms: float, probe_n: int = PROBE_DISPATCHES, target_ms: float = TARGET_MS) -> int:
    """Dispatches for a pass of about target_ms, from a probe pass of probe_n that took probe_ms (16..8192)."""
    if not probe_ms or probe_ms <= 0:
        return probe_n
    return max(16, min(8192, round(probe_n * target_ms / probe_ms)))


def _ms(xs) -> dict:
    lo, hi = stats.bootstrap_ci(xs)
    return {"median": round(stats.median(xs), 4), "ci95": [round(lo, 4), round(hi, 4)],
            "p90": round(stats.percentile(sorted(xs), 0.9), 4)}


def summarize(names, plan, wall_ms, pokes, gpu_ms=None) -> list[dict]:
    """One row per strategy: wall, GPU and overhead (wall − GPU) ms, median [95% CI] and p90, pokes; overhead
    None without GPU times."""
    rows = []
    for i, name in enumerate(names):
        at = [k for k, (s, _) in enumerate(plan) if s == i]
        if not at:
            continue
        row = {"strategy": name, "trials": len(at), "wall_ms": _ms([wall_ms[k] for k in at]),
               "pokes": stats.median([pokes[k] for k in at])}
        if gpu_ms is not None:
            row["gpu_ms"] = _ms([gpu_ms[plan[k][1]] for k in at])
            row["overhead_ms"] = _ms([wall_ms[k] - gpu_ms[plan[k][1]] for k in at])
        else:
            row["gpu_ms"] = row["overhead_ms"] = None
        rows.append(row)
    base = next((r for r in rows if r["strategy"] == "none" and r["overhead_ms"]), None)
    for r in rows:
        r["saves_ms"] = (round(base["overhead_ms"]["median"] - r["overhead_ms"]["median"], 4)
                         if base and r["overhead_ms"] else None)
    return rows


def parse_reps(value, quick: bool) -> int:
    """readback_reps from a URL/form value (None or "" → REPS, QUICK_REPS with quick); ValueError for the page."""
    from app.params import whole_number_or
    return whole_number_or(value, QUICK_REPS if quick else REPS, 2, 500, "readback_reps (trials per strategy)")


async def measure(lab, dev, rig, reps: int) -> dict:
    """The readback section of the dispatch suite (rig: app.bench.dispatch's f32 rig; its dispatch count grows by
    every dispatch run here, so the suite's final counter check covers these too)."""
    import js  # type: ignore
    import numpy as np
    from app import plan as planlib
    from app.gpu import COPY_DST, COPY_SRC, MAP_READ, QUERY_RESOLVE
    has_ts = "timestamp-query" in dev.features
    names = STRATEGIES if has_ts else tuple(s for s in STRATEGIES if s not in TIMED)

    def workload(n):
        p = planlib.Plan()
        for _ in range(n):
            p.add(rig.pipeline, [rig.bg], rig.groups, label="readback")
        return p.to_js()

    dst = dev.create_buffer(4, MAP_READ | COPY_DST, "readback target")
    scratch = dev.create_buffer(4, COPY_DST, "readback scratch")
    n_trials = max(len(names), len(SHORT)) * reps + 3
    qs = dev.create_query_set(2 * n_trials) if has_ts else None
    resolve = dev.create_buffer(16 * n_trials, QUERY_RESOLVE | COPY_SRC, "readback timestamps") if has_ts else None

    async def trials(steps, n, specs, plan):
        got = await js.dlReadback.run(dev.device, steps, qs, rig.buf, dst, scratch, js.JSON.parse(_json(specs)),
                                      js.JSON.parse(_json(plan)))
        rig.dispatched += n * len(plan)
        dev.raise_if_lost()
        return [float(w) for w in got.wall.to_py()], [int(p) for p in got.pokes.to_py()]

    async def gpu_times(count):
        if not has_ts:
            return None
        enc = dev.create_command_encoder()
        enc.resolveQuerySet(qs, 0, 2 * count, resolve, 0)
        dev.submit(js.Array.of(enc.finish()))
        raw = np.frombuffer(await dev.read_buffer(resolve, 16 * count), np.uint64).astype(np.int64)
        return [float(e - b) / 1e6 for b, e in zip(raw[0::2], raw[1::2])]

    try:
        lab.progress("dispatch: readback latency (sizing the workload)", 1)
        probe = workload(PROBE_DISPATCHES)
        wall, _ = await trials(probe, PROBE_DISPATCHES, [strategy_spec("none", 0)], [[0, 0], [0, 1], [0, 2]])
        gpu = await gpu_times(3)
        n = size(stats.median(gpu if gpu else wall))
        steps = workload(n)
        w0, _ = await trials(steps, n, [strategy_spec("none", 0)], [[0, 0], [0, 1], [0, 2]])   # warm + expected ms
        g0 = await gpu_times(3)
        expect = stats.median(g0 if g0 else w0)
        plan = order(len(names), reps)
        lab.progress(f"dispatch: readback latency ({len(plan)} trials of {n} dispatches)", 1)
        wall, pokes = await trials(steps, n, [strategy_spec(s, expect) for s in names], plan)
        gpu = await gpu_times(len(plan))
        lab.progress(f"dispatch: readback latency (one dispatch, {len(SHORT) * reps} trials)", 1)
        short_plan = order(len(SHORT), reps, SEED + 1)
        one = workload(1)
        await trials(one, 1, [strategy_spec("none", 0)], [[0, 0]])                             # warm
        s_wall, s_pokes = await trials(one, 1, [strategy_spec(s, 0) for s in SHORT], short_plan)
        s_gpu = await gpu_times(len(short_plan))
    finally:
        for b in (dst, scratch, *((resolve, qs) if has_ts else ())):
            b.destroy()
    return {
        "method": "one pass of `dispatches` counter dispatches (timestampWrites around it) and a 4-byte copy into a "
                  "MAP_READ buffer, submitted, then mapAsync awaited; overhead = wall (submit to resolved) − the "
                  "pass's GPU time; strategies interleaved in shuffled rounds",
        "dispatches": n, "expected_gpu_ms": round(expect, 4), "reps": reps, "every_us": EVERY_US, "lead_ms": LEAD_MS,
        "strategies": summarize(names, plan, wall, pokes, gpu),
        "one_dispatch": summarize(SHORT, short_plan, s_wall, s_pokes, s_gpu),
        "unsupported": [] if has_ts else [{"what": "overhead and the timed strategies",
                                          "reason": "adapter lacks timestamp-query, so the GPU time is unknown"}],
    }


def _json(obj) -> str:
    import json
    return json.dumps(obj)
