"""The "Dispatch cost" panel: run/stop, progress, results table, charts, export/import and comparison."""
from __future__ import annotations


from app import report
from app.bench import dispatch_report as DR
from app.ui import dispatch_charts, results_io
from app.ui.dom import el, esc, html_table, message, on, refuse_start, set_html, while_busy

PANEL = """
<h2>Dispatch cost</h2>
<p class="muted">What one WebGPU compute dispatch costs from Python in this browser. A trivial kernel
(<code>data[i] += 1</code>) is replayed N = 1…1024 times in four submission modes: <b>naive</b> (submit and
await after every dispatch), <b>sequential</b> (N submits, one await: the paper's method),
<b>one_encoder</b> (N passes, one submit) and <b>one_pass</b> (N dispatches in one pass). The slope of total
time against N is the cost per dispatch; the intercept is the fixed cost of waiting for the GPU.
The JS driver encodes the same objects from a tiny JS loop: the difference is the Pyodide FFI cost.</p>
<div class="controls">
  <button id="dispatch-run" class="primary">Run</button>
  <label class="inline"><span><input type="checkbox" id="dispatch-quick"> quick (fewer sizes)</span></label>
  <button id="dispatch-stop" disabled>Stop</button>
  <button id="dispatch-export-json">Export JSON</button>
  <button id="dispatch-export-csv">Export CSV</button>
  <label>Compare with earlier results (JSON, one or more)
    <input type="file" id="dispatch-import" accept=".json,application/json" multiple></label>
  <button id="dispatch-reference"
    title="Add our run on an NVIDIA H200 (Chromium 156, Vulkan, 2026-12-07) to the side-by-side table">Compare with
    our H200 run</button>
  <button id="dispatch-clear-imports">Clear comparison</button>
</div>
<div id="dispatch-messages"></div>
<div id="dispatch-summary"><p class="muted">No results yet: press Run.</p></div>
<div class="charts" id="dispatch-charts" hidden>
  <div class="chart-box"><canvas id="dispatch-chart-n"></canvas></div>
  <div class="chart-box"><canvas id="dispatch-chart-bars"></canvas></div>
</div>
<div id="dispatch-compare"></div>
<div id="dispatch-table"></div>
"""

_lab = None


async def run(lab, params: dict) -> dict:
    """The suite itself lives in app/bench/dispatch.py; panels are what app/suites.py registers.
    Marks the lab busy (Run disabled, Stop enabled) whoever started it: the Run button or autorun."""
    from app.bench import dispatch
    return await while_busy(lab, "dispatch", lambda: dispatch.run(lab, params))


def mount(lab) -> None:
    global _lab
    _lab = lab
    set_html("panel-dispatch", PANEL)
    el("dispatch-quick").checked = bool(lab.params.get("quick"))
    on("dispatch-run", "click", _run)
    on("dispatch-stop", "click", _stop)
    on("dispatch-export-json", "click", lambda e: _export(results_io.export_json))
    on("dispatch-export-csv", "click", lambda e: _export(results_io.export_csv))
    on("dispatch-import", "change", _import)
    on("dispatch-reference", "click", _reference)
    on("dispatch-clear-imports", "click", _clear)


def _say(kind: str, text: str) -> None:
    set_html("dispatch-messages", message(kind, text))


async def _run(evt) -> None:
    from app import suites
    lab = _lab
    if refuse_start(lab, _say):
        return
    set_html("dispatch-messages", "")
    lab.status("running", "Running the dispatch benchmark…")
    try:
        if lab.results is not None:
            lab.results["env"] = lab.env        # this run's environment, not a reloaded one's
        params = {**lab.params, "quick": "1" if el("dispatch-quick").checked else ""}
        await suites.run_suite(lab, "dispatch", params)
        partial = lab.results["dispatch"].get("partial")
        lab.status("done", "Stopped: partial results kept" if partial else "Done")
    except BaseException:
        lab.status("error", "Failed")
        raise


def _stop(evt) -> None:
    if _lab.busy:
        _lab.cancel_requested = True
        _say("info", "Stopping after the current point; everything measured so far is kept.")


def _export(fn) -> None:
    try:
        name = fn(_lab)
    except results_io.NothingToExport as e:
        return _say("info", str(e))
    _say("info", f"Saved {name}.")


REFERENCE_URL = "reference/nvidia-h200-2026-12-07-dispatch.json"       # build.py REFERENCE puts it in the site
REFERENCE_NAME = "NVIDIA H200, Chromium 156, 2026-12-07 (reference)"


async def _import(evt) -> None:
    _show_imports(*await results_io.import_files(_lab, "dispatch-import"))


async def _reference(evt) -> None:
    good, bad = await results_io.import_url(_lab, REFERENCE_URL, REFERENCE_NAME)
    if not good and not bad:
        return _say("info", f"{REFERENCE_NAME} is already in the comparison.")
    _show_imports(good, bad)


def _show_imports(good: list, bad: list) -> None:
    parts = []
    if good:
        parts.append(message("info", "Imported " + ", ".join(n for n, _ in good) + "."))
    for b in bad:
        parts.append(message("error", f"Not imported: {b.rstrip('.')}. Nothing already shown was changed."))
    set_html("dispatch-messages", "".join(parts))
    _compare()


def _clear(evt) -> None:
    results_io.clear_imports(_lab)
    set_html("dispatch-messages", "")
    _compare()


# ------------------------------------------------------------------------------------------ rendering
def render(lab, sec: dict) -> None:
    summary = []
    if sec.get("partial"):
        summary.append(message("info", f"Partial results: {sec.get('partial_reason', 'the run stopped early')}."))
    for c in sec.get("checks", []):
        if not c.get("ok"):
            summary.append(message("error", f"Check failed for {c['dtype']}: the buffer holds {c['got']} but "
                                            f"{c['expected']} dispatches were issued; these timings are not trustworthy."))
    ratio = sec.get("naive_over_sequential")
    summary.append(f"<p><b>naive_over_sequential</b> (f32, Python driver): "
                   f"{esc(report.fmt(ratio) + '×') if ratio is not None else 'not measured'}"
                   f" <span class='muted'>— how many times the naive method overstates one dispatch's cost</span></p>")
    summary.append("<h3>Ladder (f32, Python driver, µs per dispatch)</h3>")
    summary.append(html_table(["step", "µs / dispatch", "note"],
                              [[s, report.fmt(v), n] for s, v, n in DR.ladder(sec)], {1}))
    split = sec.get("driver_split") or []
    if split:
        summary.append("<h3>Driver split: FFI cost per dispatch</h3>")
        summary.append(html_table(["mode", "dtype", "Python slope µs", "JS slope µs", "FFI µs / dispatch [95% CI]"],
                                  [[d["mode"], d["dtype"], report.fmt(d["python_slope_us"]),
                                    report.fmt(d["js_slope_us"]),
                                    DR.with_ci(d["ffi_us_per_dispatch"], d.get("ffi_ci95"))]
                                   for d in split], {2, 3, 4}))
    if sec.get("readback"):
        summary.append(f"<h3>{esc(DR.readback_caption(sec))}</h3>")
        if DR.readback_rows(sec):
            summary.append(html_table(DR.READBACK_HEAD, DR.readback_rows(sec), {1, 2, 3, 4, 5, 6}))
        if DR.readback_rows(sec, "one_dispatch"):
            summary.append("<p class='muted'>The same wait for a pass of one dispatch (the naive round trip):</p>")
            summary.append(html_table(DR.READBACK_HEAD, DR.readback_rows(sec, "one_dispatch"), {1, 2, 3, 4, 5, 6}))
    note = (sec.get("schedule") or {}).get("naive_note")
    if note:
        summary.append(f"<p class='muted'>Note: {esc(note)}.</p>")
    set_html("dispatch-summary", "".join(summary))
    set_html("dispatch-table", _series_table(sec) + _points_table(sec))
    el("dispatch-charts").hidden = False  # empty chart boxes stay hidden until there is a run to draw
    dispatch_charts.total_vs_n(sec)
    dispatch_charts.cost_bars(sec)
    _compare()


def _series_table(sec: dict) -> str:
    head = ["mode", "dtype", "driver", "largest N", "per-dispatch µs at that N, median [95% CI]", "reps",
            "slope µs [95% CI]", "intercept µs", "r²"]
    table = html_table(head, DR.series_summary(sec), {3, 5, 6, 7, 8})
    extra = "".join(f"<tr class='unsupported'><td>all</td><td>{esc(u['dtype'])}</td><td colspan='7'>"
                    f"unsupported here: {esc(u['reason'])}</td></tr>" for u in sec.get("unsupported", []))
    gpu = sec.get("gpu") or {}
    if gpu.get("status") == "unsupported":
        extra += (f"<tr class='unsupported'><td>one_pass</td><td>all</td><td>gpu</td><td colspan='6'>"
                  f"GPU timestamps unsupported here: {esc(gpu.get('reason', ''))}</td></tr>")
    return "<h3>Per series</h3>" + table.replace("</tbody>", extra + "</tbody>")


def _points_table(sec: dict) -> str:
    rows = list(sec.get("rows", [])) + list((sec.get("gpu") or {}).get("rows") or [])
    body = [[r["mode"], r["dtype"], r["driver"], r["n"], report.fmt(r["per_dispatch_us"]["median"]),
             f"{report.fmt(r['per_dispatch_us']['ci95'][0])} – {report.fmt(r['per_dispatch_us']['ci95'][1])}",
             r["reps"]] for r in rows]
    return ("<details><summary>Every point (" + str(len(body)) + ")</summary>"
            + html_table(["mode", "dtype", "driver", "N", "per-dispatch µs (median)", "95% CI", "reps"], body,
                         {3, 4, 6}) + "</details>")


def _compare() -> None:
    lab = _lab
    if lab is None or not lab.imported:
        set_html("dispatch-compare", "")
        return
    runs = []
    if lab.results and "dispatch" in lab.results:
        runs.append(("this run", lab.results))
    runs += lab.imported
    rows = [["adapter"] + [_adapter(d) for _, d in runs],
            ["browser"] + [_browser(d) for _, d in runs],
            ["host CPU (recorded by bench)"] + [_host(d) for _, d in runs],
            ["created"] + [str(d.get("created", "—")) for _, d in runs]]
    for i, (step, _, _) in enumerate(DR.ladder({})):
        rows.append([f"{step} µs/dispatch (f32)"] + [_ladder_value(d, i) for _, d in runs])
    rows.append(["naive_over_sequential"] + [_ratio(d) for _, d in runs])
    rows.append(["FFI µs/dispatch (sequential, f32)"] + [_ffi(d) for _, d in runs])
    set_html("dispatch-compare", "<h3>Side by side</h3>"
             + html_table(["", *[n for n, _ in runs]], rows, set(range(1, len(runs) + 1))))


def _adapter(doc) -> str:
    a = (doc.get("env") or {}).get("adapter") or {}
    return " / ".join(str(a.get(k)) for k in ("vendor", "architecture", "description") if a.get(k)) or "—"


def _host(doc) -> str:
    """The CPU that the CPU-side rows ran on; only `build.py bench` can see it (env.host), a page cannot."""
    h = (doc.get("env") or {}).get("host")
    if not isinstance(h, dict):
        return "not recorded"
    return f"{h.get('cpu', '?')}, {h.get('logical_cpus', '?')} CPUs, load {h.get('load_1min_at_start', '?')}"


def _browser(doc) -> str:
    ua = str((doc.get("env") or {}).get("user_agent", ""))
    for name in ("Edg/", "Chrome/", "Firefox/", "Safari/"):
        if name in ua:
            return name.rstrip("/") + " " + ua.split(name, 1)[1].split(" ")[0].split(".")[0]
    return ua[:30] or "—"


def _ladder_value(doc, i) -> str:
    sec = doc.get("dispatch")
    return report.fmt(DR.ladder(sec)[i][1]) if sec else "no dispatch results"


def _ratio(doc) -> str:
    r = (doc.get("dispatch") or {}).get("naive_over_sequential")
    return report.fmt(r) + "×" if r is not None else "—"


def _ffi(doc) -> str:
    for d in (doc.get("dispatch") or {}).get("driver_split") or []:
        if d["mode"] == "sequential" and d["dtype"] == "f32":
            return report.fmt(d["ffi_us_per_dispatch"])
    return "—"
