"""The dispatch benchmark end to end in headless Chromium: a quick autorun, its JSON, the panel,
export → import, bad imports, reload survival and Stop.  Relations only, never absolute speeds."""
import json
import time

from app import report
from app.bench import readback as RB
from conftest import open_lab, page_text_has_no_traceback, wait_state


def _wait(page, states, timeout_s):
    """wait_state, but a timeout says where the page was stuck (status, progress, errors, console)."""
    try:
        return wait_state(page, states, timeout_s)
    except Exception as e:  # noqa: BLE001 - re-raised with the page's state
        where = {k: page.inner_text(sel) for k, sel in (("status", "#status"), ("progress", "#progress-text"),
                                                          ("error", "#error"))}
        raise AssertionError(f"page stuck: {where}; console errors: {page.console_errors[-5:]}") from e


def _fit(fits, mode, dtype="f32", driver="python"):
    return next(f for f in fits if (f["mode"], f["dtype"], f["driver"]) == (mode, dtype, driver))


def _check_section(doc):
    report.validate(doc)
    sec = doc["dispatch"]
    assert not sec.get("partial")
    assert sec["checks"] and all(c["ok"] for c in sec["checks"]), sec["checks"]   # every dispatch really ran
    assert sec["gpu_errors"] == []
    fits = sec["fits"] + sec["gpu"]["fits"]
    assert fits and all(f["slope_us"] > 0 for f in fits), [(f["mode"], f["driver"], f["slope_us"]) for f in fits]
    naive, seq = _fit(sec["fits"], "naive"), _fit(sec["fits"], "sequential")
    assert naive["slope_us"] > seq["slope_us"]
    naive_rows = [r for r in sec["rows"] if (r["mode"], r["dtype"], r["driver"]) == ("naive", "f32", "python")]
    assert naive_rows and all(r["reps"] >= 20 for r in sec["rows"])
    assert min(r["per_dispatch_us"]["median"] for r in naive_rows) > seq["slope_us"]
    assert sec["naive_over_sequential"] > 1
    for mode in ("naive", "sequential", "one_encoder", "one_pass"):
        assert {r["n"] for r in sec["rows"] if r["mode"] == mode and r["dtype"] == "f32"} >= {1, 4, 16}
    assert {(d["mode"], d["dtype"]) for d in sec["driver_split"]} >= {("sequential", "f32"), ("one_pass", "f32")}
    has_f16 = any(r["dtype"] == "f16" for r in sec["rows"])
    f16_unsupported = [u for u in sec["unsupported"] if u["dtype"] == "f16"]
    assert has_f16 != bool(f16_unsupported)
    assert all(u["reason"] for u in f16_unsupported)
    tq = doc["env"]["timestamp_query"]
    if tq["available"]:
        assert sec["gpu"]["status"] == "measured" and isinstance(tq["quantized"], bool)
    else:
        assert sec["gpu"]["status"] == "unsupported" and sec["gpu"]["reason"]
    _check_readback(sec["readback"], tq["available"])
    return sec


def _check_readback(rb, timestamps):
    """The readback-latency trials ran (the counter check above covers their dispatches too): every strategy,
    pokes only where the strategy sends them, and the wall time never shorter than the pass's GPU time (less
    the 100 µs timestamp quantization)."""
    rows = {r["strategy"]: r for r in rb["strategies"]}
    assert set(rows) == (set(RB.STRATEGIES) if timestamps else set(RB.STRATEGIES) - set(RB.TIMED)), rows
    assert rb["dispatches"] >= 16 and all(r["trials"] == rb["reps"] for r in rows.values())
    assert rows["none"]["pokes"] == 0 and rows["submit"]["pokes"] >= 1 and rows["write"]["pokes"] >= 1
    assert [r["strategy"] for r in rb["one_dispatch"]] == list(RB.SHORT)
    for r in rows.values():
        assert r["wall_ms"]["median"] > 0
        if timestamps:
            assert r["overhead_ms"]["median"] > -0.1 and r["gpu_ms"]["median"] > 0, r
        else:
            assert r["overhead_ms"] is None


def test_quick_run_export_import_reload_stop(page, server, tmp_path):
    t0 = time.time()
    page.goto(server.url + "?suite=dispatch&autorun=1&quick=1")
    assert _wait(page, ("done", "error"), 240) == "done", page.inner_text("#error")
    doc = page.evaluate("dlResults")
    sec = _check_section(doc)
    print(f"quick dispatch run: {time.time() - t0:.0f} s")

    page.click("#tabs button[data-panel=dispatch]")
    table = page.inner_text("#dispatch-table")
    assert "one_encoder" in table and "naive" in table
    if sec["unsupported"]:
        assert "unsupported here" in table
    assert page.evaluate("!!Chart.getChart('dispatch-chart-n') && !!Chart.getChart('dispatch-chart-bars')")
    assert "naive_over_sequential" in page.inner_text("#dispatch-summary")
    assert "Readback latency" in page.inner_text("#dispatch-summary") and "at_end" in page.inner_text("#dispatch-summary")

    # export JSON and CSV
    with page.expect_download() as dl:
        page.click("#dispatch-export-json")
    exported = tmp_path / "export.json"
    dl.value.save_as(exported)
    assert json.loads(exported.read_text())["dispatch"]["rows"] == sec["rows"]
    with page.expect_download() as dl:
        page.click("#dispatch-export-csv")
    csv_path = tmp_path / "export.csv"
    dl.value.save_as(csv_path)
    kinds = [line.split(",")[1] for line in csv_path.read_text().splitlines()]
    assert kinds.count("row") == len(sec["rows"]) and kinds.count("fit") == len(sec["fits"])
    assert kinds.count("readback_overhead") == len(sec["readback"]["strategies"])

    # re-import: same rows, shown side by side
    second = tmp_path / "earlier.json"
    second.write_text(exported.read_text())
    page.set_input_files("#dispatch-import", [str(exported), str(second)])
    page.wait_for_function("window.dlImported && dlImported.length === 2")
    assert page.evaluate("dlImported[0].doc.dispatch.rows") == sec["rows"]
    assert page.evaluate("dlImported[1].doc.dispatch.fits") == sec["fits"]
    compare = page.inner_text("#dispatch-compare")
    assert "this run" in compare and "export.json" in compare and "earlier.json" in compare

    # bad files: a clear message, nothing already shown is lost
    for name, body in (("bad.json", b"{ not json"), ("foreign.json", b'{"name": "x", "version": "1"}'),
                       ("empty.json", b"")):
        page.set_input_files("#dispatch-import", files=[{"name": name, "mimeType": "application/json", "buffer": body}])
        page.wait_for_selector(f"#dispatch-messages .message.error:has-text('{name}')")
    msgs = page.inner_text("#dispatch-messages")
    assert "is empty" in msgs and "Nothing already shown was changed" in msgs
    assert page.evaluate("dlImported.length") == 2
    assert "export.json" in page.inner_text("#dispatch-compare")
    assert "one_encoder" in page.inner_text("#dispatch-table")
    assert page_text_has_no_traceback(page)

    # completed results survive a reload
    page.goto(server.url)
    assert _wait(page, ("ready", "done", "error"), 120) == "ready", page.inner_text("#error")
    page.click("#tabs button[data-panel=dispatch]")
    assert "one_encoder" in page.inner_text("#dispatch-table")

    # Stop keeps what was measured, marked partial
    page.check("#dispatch-quick")
    page.click("#dispatch-run")
    page.wait_for_function("document.getElementById('progress-text').textContent.includes('round 1/')")
    page.wait_for_timeout(1500)
    page.click("#dispatch-stop")
    assert _wait(page, ("done", "error"), 120) == "done", page.inner_text("#error")
    assert "partial" in page.inner_text("#status").lower()
    assert "Partial results" in page.inner_text("#dispatch-summary")
    saved = json.loads(page.evaluate("localStorage.getItem('dispatchlab.results.v1')"))
    report.validate(saved)
    assert saved["dispatch"]["partial"] is True and saved["dispatch"]["rows"]
    assert saved["dispatch"]["readback"] == {"skipped": "the ladder stopped early"}
    assert page.external_requests == []
    assert page_text_has_no_traceback(page)


def test_bad_readback_reps_is_refused_before_anything_runs(page, server):
    page.goto(server.url + "?suite=dispatch&autorun=1&quick=1&readback_reps=1")
    assert _wait(page, ("done", "error"), 120) == "error"
    text = page.inner_text("#error")
    assert "readback_reps" in text and "2" in text, text
    assert "round 1/" not in page.inner_text("#progress-text")
    assert page_text_has_no_traceback(page)


def test_the_reference_run_joins_the_comparison(page, server, site):
    """The "Compare with our H200 run" button adds the H200 reference shipped in the site (build.py REFERENCE) to
    the side-by-side table, once; without the file the panel says so, and nothing already shown is lost."""
    assert open_lab(page, server) == "ready"
    page.click("#tabs button[data-panel=dispatch]")
    ref = site / "reference" / "nvidia-h200-2026-12-07-dispatch.json"
    hidden = ref.with_suffix(".hidden")
    ref.rename(hidden)
    try:
        page.click("#dispatch-reference")
        page.wait_for_selector("#dispatch-messages .message.error")
        assert "could not be loaded (HTTP 404)" in page.inner_text("#dispatch-messages")
        assert page.evaluate("(window.dlImported || []).length") == 0
    finally:
        hidden.rename(ref)
    page.click("#dispatch-reference")
    page.wait_for_function("window.dlImported && dlImported.length === 1")
    assert "H200" in page.evaluate("dlImported[0].doc.env.adapter.description")
    compare = page.inner_text("#dispatch-compare")
    assert "NVIDIA H200, Chromium 156, 2026-12-07 (reference)" in compare and "naive_over_sequential" in compare
    assert "Intel(R) Xeon(R) Processor, 16 CPUs, load " in compare           # the host that bench recorded
    assert "nvidia / NVIDIA H200" in compare                      # the adapter row names the GPU
    page.click("#dispatch-reference")
    page.wait_for_selector("#dispatch-messages:has-text('already in the comparison')")
    assert page.evaluate("dlImported.length") == 1
    assert page_text_has_no_traceback(page)
