"""Chart.js charts for the Amortization panel (global ``Chart`` from vendor/chart.umd.min.js).

  ms_per_token   stacked bars per plan × driver: estimated dispatch overhead (dispatches × the
                 per-dispatch cost measured this session) and the rest of the measured ms/token
  isolation      time against k (dispatches computing the same matvec) per mode, with the fitted line
                 and the line the dispatch suite's per-dispatch cost predicts (same intercept)
"""
from __future__ import annotations

import js  # type: ignore

from app.gpu import js_obj
from app.ui.dom import el

COLORS = {"one_pass": "#1b7f3b", "sequential": "#2f5bd3", "overhead": "#b3261e", "rest": "#8fa8ea",
          "gpu": "#c77700"}
_charts: dict = {}


def _replace(canvas_id: str, config: dict) -> None:
    old = _charts.pop(canvas_id, None)
    if old is not None:
        old.destroy()
    if el(canvas_id) is not None:
        _charts[canvas_id] = js.Chart.new(el(canvas_id), js_obj(config))


def bar_parts(row: dict) -> tuple[float, float]:
    """(estimated overhead ms, rest ms) of one measured row; the overhead is capped at ms/token."""
    ms = row.get("ms_per_token") or 0.0
    share = row.get("overhead_share")
    over = min(ms, ms * share) if share is not None else 0.0
    return over, ms - over


def ms_per_token(sec: dict) -> None:
    rows = [r for r in sec.get("plans", []) if "unsupported" not in r and r.get("ms_per_token")]
    labels = [f"{r['plan']}{' K=' + str(r['k']) if 'k' in r else ''} ({r['driver']})" for r in rows]
    parts = [bar_parts(r) for r in rows]
    gpu = [r["gpu_ms_per_token"] if isinstance(r.get("gpu_ms_per_token"), (int, float)) else None for r in rows]
    datasets = [
        {"label": "dispatch overhead (estimate: dispatches × per-dispatch cost)", "data": [p[0] for p in parts],
         "backgroundColor": COLORS["overhead"], "stack": "wall"},
        {"label": "rest of the measured ms/token", "data": [p[1] for p in parts],
         "backgroundColor": COLORS["rest"], "stack": "wall"},
        {"label": "GPU ms/token (timestamps)", "data": gpu, "backgroundColor": COLORS["gpu"], "stack": "gpu"}]
    _replace("amortize-chart-plans", {
        "type": "bar", "data": {"labels": labels, "datasets": datasets},
        "options": {"animation": False, "maintainAspectRatio": False,
                    "plugins": {"title": {"display": True, "text": "Decode ms per token by plan and driver"}},
                    "scales": {"x": {"stacked": True}, "y": {"stacked": True, "title": {"display": True,
                                                                                      "text": "ms / token"}}}}})


def isolation(iso: dict) -> None:
    ks = iso.get("k") or []
    per = {"one_pass": iso.get("one_pass_per_dispatch_us"), "sequential": iso.get("sequential_per_dispatch_us")}
    datasets = []
    for mode, s in (iso.get("series") or {}).items():
        color = COLORS.get(mode, "#555")
        datasets.append({"label": f"{mode}: measured", "data": [{"x": k, "y": y} for k, y in zip(ks, s["ms"])],
                         "backgroundColor": color, "borderColor": color, "pointRadius": 3})
        datasets.append({"label": f"{mode}: fit, {s['slope_us']:.1f} µs/dispatch",
                         "data": [{"x": k, "y": s["intercept_ms"] + s["slope_us"] * k / 1000} for k in ks],
                         "showLine": True, "pointRadius": 0, "borderColor": color, "borderDash": [6, 4]})
        if per.get(mode) is not None:
            datasets.append({"label": f"{mode}: dispatch suite predicts {per[mode]:.1f} µs/dispatch",
                             "data": [{"x": k, "y": s["intercept_ms"] + per[mode] * k / 1000} for k in ks],
                             "showLine": True, "pointRadius": 0, "borderColor": color, "borderDash": [1, 3],
                             "borderWidth": 2})
    _replace("amortize-chart-isolation", {
        "type": "scatter", "data": {"datasets": datasets},
        "options": {"animation": False, "maintainAspectRatio": False,
                    "plugins": {"title": {"display": True,
                                          "text": f"Same {iso.get('rows')}×{iso.get('cols')} Q4_1 matvec split into k "
                                                  "dispatches: time vs k"}},
                    "scales": {"x": {"type": "logarithmic", "title": {"display": True, "text": "k dispatches"}},
                               "y": {"title": {"display": True, "text": "ms (median)"}}}}})
