"""The environment fingerprint that goes into every results file (browser-only)."""
from __future__ import annotations

import sys

import js  # type: ignore


def _maybe(obj, name, default=None):
    v = getattr(obj, name, None)
    return default if v is None else v


def collect(dev=None) -> dict:
    """Browser, adapter, features, limits, isolation and the timer resolution actually measured."""
    import numpy
    import pyodide  # type: ignore
    env = {
        "user_agent": str(js.navigator.userAgent),
        "hardware_concurrency": _maybe(js.navigator, "hardwareConcurrency"),
        "cross_origin_isolated": bool(_maybe(js, "crossOriginIsolated", False)),
        "timer_resolution_us": round(float(js.dl.timerResolutionUs()), 3),
        "python": sys.version.split()[0],
        "pyodide": getattr(pyodide, "__version__", "?"),
        "numpy": numpy.__version__,
        "page_url": str(js.location.href).split("?")[0],
    }
    if dev is not None:
        env["adapter"] = dict(dev.adapter_info)
        env["features"] = sorted(dev.features)
        env["adapter_features"] = sorted(dev.adapter_features)
        env["limits"] = dict(dev.limits)
        env["timestamp_query"] = {"available": "timestamp-query" in dev.features, "quantized": None}
        env["shader_f16"] = "shader-f16" in dev.features
    else:
        env["adapter"] = None
    return env


async def probe_safety(dev) -> dict:
    """Run wgsl/probe_safety.wgsl once (two tiny passes, one readback) and describe what the adapter does for
    out-of-bounds reads and uninitialized workgroup memory (app.adapter.safety_facts).  Never raises: a probe
    that fails says so instead."""
    import numpy as np
    from app.adapter import OOB_BASE, OOB_INDEX, safety_facts
    from app.gpu import COPY_DST, COPY_SRC, STORAGE
    from app.llm.kernels import load_kernel
    groups = 64                                              # `peek` workgroups of 64 invocations
    words = 3 + 64 * groups                                  # out: index, oob result, fill's word, peek's words
    bufs = []
    try:
        cache: dict = {}
        k = {e: await load_kernel(dev, "probe_safety.wgsl", e, None, f"safety probe {e}", cache)
             for e in ("oob", "fill", "peek")}
        src = dev.create_buffer(256, STORAGE | COPY_DST, "safety probe src")
        out = dev.create_buffer(4 * words, STORAGE | COPY_SRC | COPY_DST, "safety probe out")
        bufs = [src, out]
        dev.write_buffer(src, 0, np.arange(OOB_BASE, OOB_BASE + 64, dtype=np.uint32))
        dev.write_buffer(out, 0, np.array([OOB_INDEX], np.uint32))
        bg = k["oob"].bind(dev, [(src, 0, 16), out], "safety probe")
        enc = dev.device.createCommandEncoder()
        for entry, n in (("oob", 1), ("fill", 4 * groups), ("peek", groups)):
            p = enc.beginComputePass()
            p.setPipeline(k[entry].pipeline)
            p.setBindGroup(0, bg)
            p.dispatchWorkgroups(n)
            p.end()
        dev.submit([enc.finish()])
        got = np.frombuffer(await dev.read_buffer(out, 4 * words), np.uint32)
        return {"status": "measured", **safety_facts(int(got[1]), [int(v) for v in got[3:]])}
    except Exception as e:  # noqa: BLE001  (a fingerprint item must not stop the page)
        return {"status": f"the probe failed: {e}"}
    finally:
        for b in bufs:
            b.destroy()
