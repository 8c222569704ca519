"""Isolation experiment: the same matvec, split into k dispatches, timed against k.

Bytes and FLOPs are held constant (one Q4_1 matrix, one vector); only the number of dispatches that
compute it changes.  Each split covers a range of rows and every row is computed by the same code, so
all splits must give bit-identical results, and all must match numpy.  A straight line through
time-vs-k gives the cost of one more dispatch in that submission mode; compared with the dispatch
suite's per-dispatch cost measured in the same session, it shows dispatch count as the cause.

Pure parts (data, splits, reference, fit, summary) run in CPython; `run` needs the browser.
"""
from __future__ import annotations

import numpy as np

from app.adapter import is_cpu
from app.bench import stats

KERNEL = "wgsl/isolation_matvec_q4_1.wgsl"
UNIFORM_SLOT = 256       # bytes between uniform slots (minUniformBufferOffsetAlignment)
MODES = ("one_pass", "sequential")


def config(adapter_info: dict, quick: bool) -> dict:
    """Sizes and kernel shape for this adapter.

    GPUs: a 4096×4096 matrix (10.5 MB of Q4_1), 32 threads per row.  CPU adapters (SwiftShader): one
    thread per row, since workgroup barriers are very costly there, and a 1024×1024 matrix, since the
    whole 4096² matvec takes ~0.2 s on two cores and would bury a 20–50 µs/dispatch slope in noise.
    """
    cpu = is_cpu(adapter_info)
    size = 1024 if cpu else 4096
    cfg = {"rows": size, "cols": size, "max_k": 512, "reps": 7, "wg": 64 if cpu else 256, "rpw": 64 if cpu else 8}
    if quick:
        cfg.update(max_k=256, reps=3)
    return cfg


# ------------------------------------------------------------------------------------------ pure
def k_values(rows: int, max_k: int) -> list[int]:
    """1, 2, 4 … max_k (at most one dispatch per row)."""
    ks, k = [], 1
    while k <= max_k and k <= rows:
        ks.append(k)
        k *= 2
    return ks


def splits(rows: int, k: int) -> list[tuple[int, int]]:
    """k contiguous (row0, nrows) ranges covering 0..rows, as equal as possible."""
    if not 1 <= k <= rows:
        raise ValueError(f"cannot split {rows} rows into {k} dispatches")
    bounds = [rows * i // k for i in range(k + 1)]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(k)]


def make_q4_1(rows: int, cols: int, seed: int = 1) -> np.ndarray:
    """Synthetic Q4_1 matrix as raw blocks, shape (rows, cols // 32, 20) uint8."""
    if cols % 32:
        raise ValueError(f"cols must be a multiple of 32, got {cols}")
    rng = np.random.default_rng(seed)
    nb = cols // 32
    d = rng.uniform(0.002, 0.02, (rows, nb)).astype(np.float16)
    m = (-8.0 * d.astype(np.float32) * rng.uniform(0.8, 1.2, (rows, nb))).astype(np.float16)
    blocks = np.empty((rows, nb, 20), np.uint8)
    blocks[..., 0:2] = d[..., None].view(np.uint8)
    blocks[..., 2:4] = m[..., None].view(np.uint8)
    blocks[..., 4:] = rng.integers(0, 256, (rows, nb, 16), dtype=np.uint8)
    return blocks


def dequant_q4_1(blocks: np.ndarray) -> np.ndarray:
    """(rows, nb, 20) uint8 blocks → (rows, nb * 32) float32 weights (w = d * q + m)."""
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = blocks[..., 4:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32)   # j < 16 low, j >= 16 high
    return (d[..., None] * q + m[..., None]).reshape(blocks.shape[0], -1)


def reference(blocks: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (dequant_q4_1(blocks).astype(np.float64) @ x.astype(np.float64)).astype(np.float32)


def compare(y: np.ndarray, y1: np.ndarray, ref: np.ndarray, scale: np.ndarray) -> dict:
    """How a split's result differs from k=1 (must be exactly 0) and from numpy (scaled error)."""
    return {"max_abs_diff_vs_k1": float(np.max(np.abs(y - y1))),
            "max_rel_err_vs_numpy": float(np.max(np.abs(y.astype(np.float64) - ref) / scale))}


def fit(ks: list[int], ms: list[float]) -> dict:
    """Least-squares line ms = intercept + slope * k, slope reported in µs per dispatch."""
    slope, intercept, r2 = stats.linfit(ks, ms)
    return {"slope_us": slope * 1000.0, "intercept_ms": intercept, "r2": r2}


def summarize(ks: list[int], times: dict, checks: list[dict], per_dispatch: dict, gpu_ms=None,
              shape=(0, 0), driver: str = "python") -> dict:
    """The JSON section.  times: mode -> {k: [ms per run]}.  The headline series is one_pass."""
    series = {}
    for mode, by_k in times.items():
        med = [stats.median(by_k[k]) for k in ks]
        ci = [list(stats.bootstrap_ci(by_k[k])) for k in ks]
        series[mode] = {"ms": med, "ci_ms": ci, **fit(ks, med)}
    head = series["one_pass"]
    out = {"k": list(ks), "ms": head["ms"], "slope_us": head["slope_us"],
           "sequential_per_dispatch_us": per_dispatch.get("sequential_us"),
           "one_pass_per_dispatch_us": per_dispatch.get("one_pass_us"),
           "per_dispatch_source": per_dispatch.get("source"),
           "series": series, "rows": shape[0], "cols": shape[1], "driver": driver,
           "weight_bytes": shape[0] * shape[1] // 32 * 20, "checks": checks,
           "all_splits_identical": all(c["max_abs_diff_vs_k1"] == 0.0 for c in checks)}
    if "sequential" in series:
        out["sequential_slope_us"] = series["sequential"]["slope_us"]
    if gpu_ms is not None:
        out["gpu_ms"] = gpu_ms
        if len(set(gpu_ms)) > 1:
            out["gpu_slope_us"] = fit(ks, gpu_ms)["slope_us"]
    return out


# ------------------------------------------------------------------------------------------ browser
async def build(dev, rows: int, cols: int, ks: list[int], rpw: int, wg: int, seed: int = 1):
    """Upload the matrix and vector once; record one plan per k.  Returns (plans, bufs, host data)."""
    from app import gpu
    from app.plan import Plan
    blocks = make_q4_1(rows, cols, seed)
    x = np.random.default_rng(seed + 1).standard_normal(cols).astype(np.float32)
    w_buf = dev.create_buffer(blocks.nbytes, gpu.STORAGE | gpu.COPY_DST, "isolation W")
    x_buf = dev.create_buffer(x.nbytes, gpu.STORAGE | gpu.COPY_DST, "isolation x")
    y_buf = dev.create_buffer(rows * 4, gpu.STORAGE | gpu.COPY_SRC | gpu.COPY_DST, "isolation y")
    dev.write_buffer(w_buf, 0, blocks)
    dev.write_buffer(x_buf, 0, x)
    with open(KERNEL) as f:
        module = await dev.shader(f.read(), "isolation_matvec_q4_1")
    pipe = await dev.checked("creating the isolation pipeline", dev.create_compute_pipeline, module, "main",
                             {"ROWS": rpw, "WG": wg}, "isolation")
    plans, uniforms = {}, []
    for k in ks:
        parts = splits(rows, k)
        u = dev.create_buffer(len(parts) * UNIFORM_SLOT, gpu.UNIFORM | gpu.COPY_DST, f"isolation params k={k}")
        data = np.zeros((len(parts), UNIFORM_SLOT // 4), np.uint32)
        for i, (r0, n) in enumerate(parts):
            data[i, :3] = (r0, n, cols // 32)
        dev.write_buffer(u, 0, data)
        uniforms.append(u)
        plan = Plan()
        for i, (r0, n) in enumerate(parts):
            bg = dev.create_bind_group(pipe, [(u, i * UNIFORM_SLOT, 16), w_buf, x_buf, y_buf])
            plan.add(pipe, [bg], (-(-n // rpw), 1, 1), label=f"rows {r0}+{n}")
        plans[k] = plan
    bufs = {"w": w_buf, "x": x_buf, "y": y_buf, "uniforms": uniforms}
    return plans, bufs, (blocks, x)


async def timed(dev, plan, mode: str, driver: str) -> float:
    """Wall ms from the first encode call to the GPU reporting the work done."""
    import js  # type: ignore
    from app.plan import replay
    t0 = js.performance.now()
    await replay(dev, plan, mode, driver)
    await dev.on_submitted_work_done()
    return float(js.performance.now() - t0)


async def check_splits(dev, plans: dict, bufs: dict, host, rows: int) -> list[dict]:
    """Run each split once, read y back, compare with k=1 and numpy."""
    blocks, x = host
    ref = reference(blocks, x).astype(np.float64)
    scale = np.abs(dequant_q4_1(blocks)) @ np.abs(x).astype(np.float64) + 1e-30
    out, y1 = [], None
    for k, plan in plans.items():
        dev.write_buffer(bufs["y"], 0, np.full(rows, np.nan, np.float32))   # a missed row shows as NaN
        await timed(dev, plan, "one_pass", "js")
        y = np.frombuffer(await dev.read_buffer(bufs["y"], rows * 4), np.float32).copy()
        y1 = y if y1 is None else y1
        out.append({"k": k, **compare(y, y1, ref, scale)})
    return out


async def gpu_times(dev, plans: dict) -> list[float] | None:
    """GPU ms per k from timestamp queries around the one pass (None without timestamp-query)."""
    if "timestamp-query" not in dev.features:
        return None
    from app import gpu
    from app.plan import replay
    qs = dev.create_query_set(2)
    res = dev.create_buffer(16, gpu.QUERY_RESOLVE | gpu.COPY_SRC, "isolation timestamps")
    out = []
    for plan in plans.values():
        await replay(dev, plan, "one_pass", "js", timestamps=(qs, 0, 1))
        enc = dev.create_command_encoder()
        enc.resolveQuerySet(qs, 0, 2, res, 0)
        dev.submit([enc.finish()])
        t = np.frombuffer(await dev.read_buffer(res, 16), np.uint64)
        out.append(float(int(t[1]) - int(t[0])) / 1e6)
    qs.destroy()
    res.destroy()
    return out


async def run(dev, quick: bool = False, driver: str = "python", per_dispatch: dict | None = None,
              progress=None, check_cancel=None, sizes: dict | None = None) -> dict:
    """The whole experiment; progress(msg, fraction) and check_cancel() are the lab's."""
    cfg = dict(config(dev.adapter_info, quick), **(sizes or {}))
    rows, cols = cfg["rows"], cfg["cols"]
    ks = k_values(rows, cfg["max_k"])
    plans, bufs, host = await build(dev, rows, cols, ks, cfg["rpw"], cfg["wg"])
    try:
        checks = await check_splits(dev, plans, bufs, host, rows)
        for plan in plans.values():                       # warm-up: pipelines, driver caches
            for mode in MODES:
                await timed(dev, plan, mode, driver)
        times = {mode: {k: [] for k in ks} for mode in MODES}
        total = cfg["reps"] * len(ks) * len(MODES)
        for rep in range(cfg["reps"]):                    # round-robin over k: drift hits every k alike
            for i, k in enumerate(ks):
                for j, mode in enumerate(MODES):
                    if check_cancel:
                        check_cancel()
                    times[mode][k].append(await timed(dev, plans[k], mode, driver))
                    if progress:
                        done = (rep * len(ks) + i) * len(MODES) + j + 1
                        progress(f"isolation: k={k} {mode} (run {rep + 1}/{cfg['reps']})", done / total)
        gpu_ms = await gpu_times(dev, plans)
    finally:
        for b in (bufs["w"], bufs["x"], bufs["y"], *bufs["uniforms"]):
            b.destroy()
    out = summarize(ks, times, checks, per_dispatch or {}, gpu_ms, (rows, cols), driver)
    out["kernel"] = {"workgroup_size": cfg["wg"], "rows_per_workgroup": cfg["rpw"]}
    return out
