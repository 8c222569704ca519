"""The dispatch-overhead suite (browser): what one compute dispatch costs in each submission mode.

For each dtype a tiny counter kernel (wgsl/dispatch_<dtype>.wgsl, data[i] += 1 on 256 elements) gets
one pipeline, one bind group and one Plan of N identical steps per N, all built before anything is
timed (the JS arrays for the JS driver too).  A timed repetition is

    t0 = performance.now(); await plan.replay(mode, driver); await onSubmittedWorkDone(); t1

(naive mode awaits after every dispatch inside replay, so it needs no extra await).  The schedule and
the statistics live in app/bench/dispatch_model.py; see its docstring for the interleaving.
One_pass is also timed on the GPU with timestampWrites where the adapter has timestamp-query.
At the end every counter buffer is read back once and compared with the number of dispatches issued,
so a dispatch that silently did not run is caught.
"""
from __future__ import annotations

from pathlib import Path

import js  # type: ignore
import numpy as np

from app import plan as planlib
from app.bench import dispatch_model as M
from app.bench import readback as RB
from app.bench import stats
from app.gpu import COPY_DST, COPY_SRC, QUERY_RESOLVE, STORAGE, GPUError, WebGPUUnavailable
from app.params import FALSE, TRUE

ELEMENTS = 256
WG = 64
NP_DTYPE = {"f32": np.float32, "i32": np.int32, "f16": np.float16}
WGSL_DIR = Path(__file__).resolve().parents[2] / "wgsl"


class Rig:
    """One dtype's kernel, counter buffer, bind group and prebuilt plans; counts what it dispatched."""

    def __init__(self, dtype, pipeline, buf, plans, bg=None):
        self.dtype, self.pipeline, self.buf, self.plans, self.bg = dtype, pipeline, buf, plans, bg
        self.groups = (ELEMENTS // WG, 1, 1)
        self.dispatched = 0


async def make_rig(dev, dtype: str, ns) -> Rig:
    name = f"dispatch_{dtype}.wgsl"
    module = await dev.shader((WGSL_DIR / name).read_text(), name)
    pipeline = await dev.checked(f"creating the {dtype} pipeline", dev.create_compute_pipeline, module, "main",
                                 {"WG": WG}, name)
    nbytes = ELEMENTS * np.dtype(NP_DTYPE[dtype]).itemsize
    buf = dev.create_buffer(nbytes, STORAGE | COPY_SRC | COPY_DST, f"counters {dtype}")
    dev.write_buffer(buf, 0, np.zeros(ELEMENTS, NP_DTYPE[dtype]))
    bg = await dev.checked(f"binding the {dtype} buffer", dev.create_bind_group, pipeline, [buf])
    plans = {}
    for n in ns:
        p = planlib.Plan()
        for _ in range(n):
            p.add(pipeline, [bg], (ELEMENTS // WG, 1, 1), label=dtype)
        p.to_js()                     # the JS driver's array, built outside the timed region
        plans[n] = p
    return Rig(dtype, pipeline, buf, plans, bg)


async def timed_rep(dev, rig: Rig, n: int, mode: str, driver: str) -> float:
    """One timed repetition; returns wall time in µs."""
    plan = rig.plans[n]
    now = js.performance.now
    t0 = now()
    await planlib.replay(dev, plan, mode, driver)
    if mode != "naive":
        await dev.on_submitted_work_done()
    t1 = now()
    rig.dispatched += n
    return (t1 - t0) * 1000.0


async def untimed(dev, rig: Rig, n: int, mode: str, driver: str) -> None:
    await planlib.replay(dev, rig.plans[n], mode, "python" if driver == M.GPU else driver)
    await dev.on_submitted_work_done()
    rig.dispatched += n


class Timestamps:
    """A query set with two slots per repetition and the buffer its values resolve into."""

    def __init__(self, dev, reps: int):
        self.count = 2 * reps
        self.qs = dev.create_query_set(self.count)
        self.resolve = dev.create_buffer(8 * self.count, QUERY_RESOLVE | COPY_SRC, "timestamps")
        self.raw: list[int] = []

    async def visit(self, dev, rig: Rig, n: int, reps: int) -> list[float]:
        """Run one_pass reps times with timestampWrites; return GPU µs per repetition."""
        for r in range(reps):
            await planlib.replay(dev, rig.plans[n], "one_pass", "python", timestamps=(self.qs, 2 * r, 2 * r + 1))
            rig.dispatched += n
        enc = dev.create_command_encoder()
        enc.resolveQuerySet(self.qs, 0, 2 * reps, self.resolve, 0)
        dev.submit(js.Array.of(enc.finish()))
        raw = np.frombuffer(await dev.read_buffer(self.resolve, 16 * reps), dtype=np.uint64).astype(np.int64)
        self.raw += [int(x) for x in raw]
        return [float(e - b) / 1000.0 for b, e in zip(raw[0::2], raw[1::2])]


def _dtypes(dev) -> tuple[list[str], list[dict]]:
    have, unsupported = [], []
    for d in M.DTYPES:
        if d == "f16" and "shader-f16" not in dev.features:
            unsupported.append({"dtype": "f16", "reason": "adapter lacks shader-f16"})
        else:
            have.append(d)
    return have, unsupported


async def _check(dev, rigs) -> list[dict]:
    out = []
    for d, rig in rigs.items():
        arr = np.frombuffer(await dev.read_buffer(rig.buf, ELEMENTS * np.dtype(NP_DTYPE[d]).itemsize), NP_DTYPE[d])
        want = M.expected_value(d, rig.dispatched)
        got = sorted({float(x) for x in arr})[:4]
        out.append({"dtype": d, "dispatches": rig.dispatched, "expected": want,
                    "got": got[0] if len(got) == 1 else got, "ok": bool(np.all(arr == want))})
    return out


async def run(lab, params: dict) -> dict:
    dev = lab.dev
    if dev is None:
        raise WebGPUUnavailable(lab.gpu_error or "no GPU device")
    cfg = M.settings(str(params.get("quick", "")).lower() in TRUE)
    rb_reps = RB.parse_reps(params.get("readback_reps"), str(params.get("quick", "")).lower() in TRUE)
    dtypes, unsupported = _dtypes(dev)
    has_ts = "timestamp-query" in dev.features
    lab.progress("dispatch: compiling kernels and building plans", 0)
    rigs = {d: await make_rig(dev, d, cfg["n"]) for d in dtypes}
    ts = Timestamps(dev, cfg["reps_per_visit"]) if has_ts else None
    cfg = M.cap_naive(cfg, await naive_await_us(lab, dev, rigs["f32"]), len(dtypes))
    series = M.series_list(dtypes, has_ts)
    errors_before = len(dev.uncaptured)
    t_start = js.performance.now()
    samples, partial = await measure(lab, dev, rigs, ts, series, cfg)
    elapsed = (js.performance.now() - t_start) / 1000.0
    latency = await _readback(lab, dev, rigs["f32"], params, partial, rb_reps)
    checks = []
    if dev.lost_reason is None:
        try:
            checks = await _check(dev, rigs)
        except GPUError as e:
            partial = partial or f"reading the counters back failed: {e}"
    lab.progress("dispatch: statistics (bootstrap intervals, fits)", 1)
    t_stats = js.performance.now()
    sec = M.assemble(samples, cfg, unsupported, has_ts, ts.raw if ts else [], checks, elapsed)
    sec["analysis_s"] = round((js.performance.now() - t_stats) / 1000.0, 2)
    sec["kernel"] = {"elements": ELEMENTS, "workgroup_size": WG, "files": [f"wgsl/dispatch_{d}.wgsl" for d in rigs]}
    sec["gpu_errors"] = list(dev.uncaptured[errors_before:])
    sec["readback"] = latency
    if partial:
        sec["partial"], sec["partial_reason"] = True, partial
    _env_timestamps(lab, sec["gpu"])
    _report_problems(lab, sec)
    lab.progress("dispatch: " + ("partial results kept" if partial else "done"), 1)
    return sec


async def _readback(lab, dev, rig: Rig, params: dict, partial, reps: int) -> dict:
    """The readback-latency section (app.bench.readback), or why it did not run; a failure there keeps the ladder."""
    from app.lab import Cancelled
    if str(params.get("readback", "")).strip().lower() in FALSE:
        return {"skipped": "readback=0"}
    if partial or dev.lost_reason is not None:
        return {"skipped": "the ladder stopped early"}
    try:
        return await RB.measure(lab, dev, rig, reps)
    except Cancelled:
        return {"skipped": "stopped by the user"}
    except Exception as e:  # noqa: BLE001 - a GPU or JS error here must not cost the ladder already measured
        lab.error("The readback-latency measurement failed", f"{e} (the ladder measured before it is kept)")
        return {"skipped": f"failed: {e}"}


async def naive_await_us(lab, dev, rig: Rig, reps: int = 12) -> float:
    """Median cost of one naive dispatch (submit + await) here, to size naive mode's schedule."""
    lab.progress("dispatch: measuring the cost of one await", 0)
    await untimed(dev, rig, 1, "naive", M.PY)
    return stats.median([await timed_rep(dev, rig, 1, "naive", M.PY) for _ in range(reps)])


async def measure(lab, dev, rigs, ts, series, cfg) -> tuple[dict, str | None]:
    """Warm up, then run the interleaved schedule.  Returns (samples, why it stopped early or None);
    Stop and GPU errors end it early but keep every repetition measured so far."""
    from app.lab import Cancelled
    schedule = M.visits(M.points(series, cfg), cfg)
    samples = {s: {} for s in series}
    total = sum(M.visit_cost(s, n, cfg) for _, s, n in schedule)
    done, i = 0.0, 0
    try:
        lab.progress("dispatch: warming up", 0)
        for mode, dtype, driver in series:       # first use of every path: JIT, lazy compiles, caches
            for n in sorted({1, 1 if mode == "naive" else max(cfg["n"])}):
                await untimed(dev, rigs[dtype], n, mode, driver)
        for i, (rnd, s, n) in enumerate(schedule):
            lab.check_cancel()
            mode, dtype, driver = s
            lab.progress(f"dispatch: round {rnd + 1}/{cfg['rounds']} · {mode} {dtype} {driver} N={n} "
                         f"({i + 1}/{len(schedule)})", done / total)
            rig, k = rigs[dtype], cfg["reps_per_visit"]
            # warm-up: re-prime this path after whatever ran before; for naive (every dispatch is its
            # own round trip) one dispatch does that, a whole untimed N=1024 replay would cost seconds
            await untimed(dev, rig, 1 if mode == "naive" else n, mode, driver)
            if driver == M.GPU:
                got = await ts.visit(dev, rig, n, k)
            else:
                got = [await timed_rep(dev, rig, n, mode, driver) for _ in range(k)]
            samples[s].setdefault(n, []).extend(got)
            done += M.visit_cost(s, n, cfg)
    except Cancelled:
        return samples, f"stopped by the user after {i} of {len(schedule)} visits"
    except GPUError as e:
        lab.error("GPU error during the dispatch benchmark", f"{e} (what was measured before it is kept)")
        return samples, f"GPU error after {i} of {len(schedule)} visits: {e}"
    return samples, None


def _report_problems(lab, sec: dict) -> None:
    bad = [c for c in sec["checks"] if not c["ok"]]
    if bad or sec["gpu_errors"]:
        lab.error("Dispatch results failed their check",
                  "; ".join([f"{c['dtype']}: buffer holds {c['got']}, expected {c['expected']}" for c in bad]
                            + sec["gpu_errors"][:3]),
                  "Some dispatches did not run as issued, so these timings are not trustworthy.")


def _env_timestamps(lab, gpu: dict) -> None:
    tq = lab.env.setdefault("timestamp_query", {})
    tq["available"] = gpu["status"] == "measured"
    if gpu.get("quantized") is not None:
        tq["quantized"] = gpu["quantized"]
