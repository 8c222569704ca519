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
