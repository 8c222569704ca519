"""Chart.js charts for the dispatch panel (global ``Chart`` from vendor/chart.umd.min.js)."""
from __future__ import annotations

import js  # type: ignore
from pyodide.ffi import create_proxy  # type: ignore

from app.gpu import js_obj
from app.ui.dom import el

COLORS = {"naive": "#b3261e", "sequential": "#2f5bd3", "one_encoder": "#8a4fd1", "one_pass": "#1b7f3b",
          "GPU time": "#c77700"}
BAR_COLORS = ["#2f5bd3", "#8fa8ea", "#1b7f3b", "#87c79c", "#c77700", "#e8b866", "#8a4fd1", "#c3a6ea"]
_charts: dict = {}
# Legend shows one entry per mode; the fitted lines carry the slope in their dataset label instead.
_legend_filter = None


def _only_measured():
    global _legend_filter
    if _legend_filter is None:
        _legend_filter = create_proxy(lambda item, *rest: " fit" not in str(item.text))
    return _legend_filter


def _replace(canvas_id: str, config: dict) -> None:
    old = _charts.pop(canvas_id, None)
    if old is not None:
        old.destroy()
    _charts[canvas_id] = js.Chart.new(el(canvas_id), js_obj(config))


def _log_axis(title: str) -> dict:
    return {"type": "logarithmic", "title": {"display": True, "text": title}}


def total_vs_n(sec: dict, dtype: str = "f32") -> None:
    """Median total time against N per mode (Python driver) with each mode's least-squares line."""
    series = [(m, sec.get("rows", []), sec.get("fits", []), "python") for m in
              ("naive", "sequential", "one_encoder", "one_pass")]
    gpu = sec.get("gpu") or {}
    series.append(("GPU time", gpu.get("rows") or [], gpu.get("fits") or [], "gpu"))
    datasets = []
    for label, rows, fits, driver in series:
        mode = "one_pass" if label == "GPU time" else label
        pts = [r for r in rows if (r["mode"], r["dtype"], r["driver"]) == (mode, dtype, driver)]
        if not pts:
            continue
        color = COLORS[label]
        data = [{"x": r["n"], "y": r.get("total_us_median", r["per_dispatch_us"]["median"] * r["n"])} for r in pts]
        fit = next((f for f in fits if (f["mode"], f["dtype"], f["driver"]) == (mode, dtype, driver)), None)
        slope = f": {fit['slope_us']:.1f} µs/dispatch" if fit else ""
        datasets.append({"label": f"{label}{slope}", "data": data, "backgroundColor": color,
                         "borderColor": color, "pointRadius": 3})
        if fit:
            line = [{"x": r["n"], "y": fit["intercept_us"] + fit["slope_us"] * r["n"]} for r in pts]
            line = [p for p in line if p["y"] > 0]
            datasets.append({"label": f"{label} fit", "data": line,
                             "showLine": True, "pointRadius": 0, "borderColor": color, "borderDash": [6, 4],
                             "borderWidth": 1.5})
    _replace("dispatch-chart-n", {
        "type": "scatter", "data": {"datasets": datasets},
        "options": {"animation": False, "maintainAspectRatio": False,
                    "plugins": {"title": {"display": True, "text": f"Total time vs N ({dtype}, Python driver); "
                                                                   "dashed: least-squares fit"},
                                "legend": {"labels": {"filter": _only_measured()}}},
                    "scales": {"x": _log_axis("N dispatches"), "y": _log_axis("total time (µs)")}}})


def cost_bars(sec: dict) -> None:
    """Per-dispatch cost (fit slope) by mode, one bar per dtype × driver."""
    labels = ["naive", "sequential", "one_encoder", "one_pass", "GPU time"]
    fits = list(sec.get("fits", [])) + list((sec.get("gpu") or {}).get("fits") or [])
    order = {"python": 0, "js": 1, "gpu": 2}
    combos = sorted({(f["dtype"], f["driver"]) for f in fits}, key=lambda c: (c[0], order.get(c[1], 9)))
    datasets = []
    for i, (dtype, driver) in enumerate(combos):
        values = []
        for label in labels:
            mode = "one_pass" if label == "GPU time" else label
            want_gpu = label == "GPU time"
            f = next((f for f in fits if (f["mode"], f["dtype"], f["driver"]) == (mode, dtype, driver)
                      and (driver == "gpu") == want_gpu), None)
            values.append(f["slope_us"] if f and f["slope_us"] > 0 else None)
        datasets.append({"label": f"{dtype} · {driver}", "data": values,
                         "backgroundColor": BAR_COLORS[i % len(BAR_COLORS)]})
    _replace("dispatch-chart-bars", {
        "type": "bar", "data": {"labels": labels, "datasets": datasets},
        "options": {"animation": False, "maintainAspectRatio": False,
                    "plugins": {"title": {"display": True, "text": "Cost per dispatch (fit slope) by mode, dtype, driver"}},
                    "scales": {"y": _log_axis("µs per dispatch")}}})
