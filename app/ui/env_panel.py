"""The environment card."""
from app.ui.dom import kv, set_html, message


def render(lab) -> None:
    env = lab.env
    a = env.get("adapter") or {}
    rows = [
        ("User agent", env.get("user_agent")),
        ("Adapter", " / ".join(str(a.get(k) or "—") for k in ("vendor", "architecture", "device")) if a else "none"),
        ("Description", a.get("description") or "—"),
        ("Fallback adapter", a.get("isFallbackAdapter")),
        ("Cross-origin isolated", env.get("cross_origin_isolated")),
        ("Timer resolution (measured)", f"{env.get('timer_resolution_us')} µs"),
        ("Timestamp queries", _ts(env.get("timestamp_query"))),
        ("shader-f16", "yes" if env.get("shader_f16") else "no (f16 rows are marked unsupported)"),
        *_safety(env.get("safety")),
        ("CPU threads (hardwareConcurrency)", env.get("hardware_concurrency")),
        ("Python / Pyodide / numpy", f"{env.get('python')} / {env.get('pyodide')} / {env.get('numpy')}"),
        ("Features", ", ".join(env.get("features") or []) or "—"),
    ]
    limits = env.get("limits") or {}
    rows += [(f"limit {k}", v) for k, v in limits.items()]
    extra = ""
    if a.get("isFallbackAdapter"):
        extra = message("info", "This is a fallback (software/CPU) adapter: per-dispatch costs here say little about a real GPU.")
    sf = env.get("safety") or {}
    if sf.get("status") == "measured" and not sf.get("safe"):
        extra += message("info", "This browser runs WebGPU without one of its safety checks (see the probed rows "
                                 "below), as with --enable-dawn-features=disable_robustness or disable_workgroup_init. "
                                 "Those checks cost GPU time, so numbers from here are not comparable with a "
                                 "browser's defaults.")
    if not env.get("cross_origin_isolated"):
        extra += message("info", "The page is not cross-origin isolated, so performance.now() is coarse; "
                                 "serve it with COOP/COEP (python build.py serve does).")
    set_html("env-card", extra + kv(rows))


def _ts(tq) -> str:
    if not tq:
        return "—"
    if not tq.get("available"):
        return "unsupported here"
    q = tq.get("quantized")
    return "available" + ("" if q is None else (", quantized (100 µs steps)" if q else ", not quantized"))


def _safety(sf) -> list:
    """The safety probe's rows (app.environment.probe_safety); none before it ran."""
    if not sf:
        return []
    if sf.get("status") != "measured":
        return [("Safety checks (probed)", sf.get("status"))]
    return [("Out-of-bounds storage read (probed)", sf.get("out_of_bounds_read")),
            ("Workgroup memory before a write (probed)", sf.get("workgroup_memory_before_write"))]
