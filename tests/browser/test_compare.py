"""The compare suite in the page: every row, offline, honest about wllama's WebGPU fallback, greedy tokens that
agree across engines, and a wllama failure that stays in its rows while the run completes.

PROMPT is chosen for large logit margins: its first 8 greedy tokens lead by >= 1.76 logits in the numpy
reference (app/llm/reference.py), far above llama.cpp's 8-bit activation rounding, so every engine must agree.
"""
import json
import urllib.parse

import pytest

from app import compare_report as cr
from app import report
from conftest import open_lab, page_text_has_no_traceback

PROMPT = "1 2 3 4 5 6"
GREEDY = [216, 39, 216, 40, 216, 41, 216, 33]  # " 7 8 9 1", from app.llm.reference (see test_wllama_glue.py)
N = 4


def query(**extra):
    q = {"suite": "compare", "autorun": "1", "quick": "1", "runs": "1", "max_new_tokens": str(N), "prompt": PROMPT,
         **extra}
    return urllib.parse.urlencode(q)


def test_compare_suite_rows_agreement_and_fallback(page, server):
    assert open_lab(page, server, query(resident_tuning='{"wg": 64}'), timeout_s=900) == "done"
    assert page.external_requests == []
    doc = page.evaluate("dlResults")
    report.validate(doc)
    sec = doc["compare"]
    hc = page.evaluate("navigator.hardwareConcurrency")
    rows = {(e["engine"], e["mode"].split("→")[0], e["threads"]): e for e in sec["engines"]}
    ours = [e for e in sec["engines"] if e["engine"] == "ours"]
    assert [e["mode"] for e in ours][-1] == "op_by_op" and sec["reference"] == "ours/" + ours[0]["mode"]
    expected = {("wllama", "webgpu", hc), ("wllama", "cpu", 1)} | ({("wllama", "cpu", hc)} if hc > 1 else set())
    assert expected <= set(rows) and len(sec["engines"]) == len(ours) + len(expected)
    assert sec["n_ctx"] >= sec["prompt_tokens"] + N and sec["max_new_tokens"] == N and sec["prompt"] == PROMPT
    assert sec["resident_tuning_overrides"] == {"wg": 64}                # recorded with the rows it applied to
    assert "warm-up before the timed runs: 1 token" in sec["notes"]       # a CPU adapter: no clocks to ramp up

    for e in sec["engines"]:
        assert not e["error"], (e["engine"], e["mode"], e["error"])
        assert e["generated_token_ids"] == GREEDY[:N], (e["engine"], e["mode"])
        assert e["agree_prefix"] == N
        assert e["decode_tok_per_s"] > 0 and e["ttft_ms"] > 0 and e["ours_speedup"] > 0
        if e["engine"] == "wllama":
            assert cr.NO_DISPATCH_COUNT in e["note"] and e["dispatches_per_token"] is None
            assert e["wllama"]["prompt_n"] == sec["prompt_tokens"]  # same tokens in: no BOS, same tokenizer
        else:
            assert e["dispatches_per_token"] > 0
            # decode_tok_per_s is the rate after the first token, as wllama's; our suites' rate is kept beside it
            assert e["decode_from_prefill_tok_per_s"] > 0 and "counted from the prefill's end" in e["note"]

    web = rows[("wllama", "webgpu", hc)]
    if not sec["wllama"]["capabilities"]["shader_f16"]:  # SwiftShader: must say so, never claim the GPU
        assert web["on_gpu"] is False and web["mode"] == "webgpu→cpu"
        assert web["note"].startswith(cr.FALLBACK_F16)
        assert cr.FALLBACK_F16 in page.inner_text("#panel-compare")
    else:
        assert web["on_gpu"] is (web["wllama"]["offloaded"] is not None)
    assert all(not rows[k]["on_gpu"] for k in rows if k[1] == "cpu")

    text = report.format_tables(doc)
    assert "Compare: our engine vs wllama" in text and cr.FALLBACK_F16 in text or web["on_gpu"]
    assert page.locator("#cmp-table table tbody tr").count() == len(sec["engines"])
    assert page_text_has_no_traceback(page)


def test_wllama_failure_stays_in_its_rows_panel_run(page, server):
    """Run from the panel's form (not autorun) with wllama's wasm gone: its rows say why, ours still run
    (the resident plan picked in the form, with its K and kernel shape in the row)."""
    page.route("**/vendor/wllama/wllama.wasm", lambda r: r.fulfill(status=404, body="gone"))
    assert open_lab(page, server) == "ready"
    page.click("#tabs button[data-panel=compare]")
    page.fill("#cmp-prompt", "1 2")
    page.fill("#cmp-max", "2")
    page.fill("#cmp-runs", "1")
    page.click("#cmp-plan")  # focus lists the registered plans
    page.select_option("#cmp-plan", "resident")
    page.click("#cmp-run")
    page.wait_for_selector("#status[data-state=done], #status[data-state=error]", timeout=900_000)
    assert page.get_attribute("#status", "data-state") == "done"
    sec = json.loads(page.evaluate("localStorage.getItem('dispatchlab.results.v1')"))["compare"]
    wl = [e for e in sec["engines"] if e["engine"] == "wllama"]
    assert wl and all(e["error"] and "Aborted(" in e["error"] and e["decode_tok_per_s"] is None for e in wl)
    assert all(e["on_gpu"] is False for e in wl)
    ours = [e for e in sec["engines"] if e["engine"] == "ours"]
    assert [e["mode"] for e in ours] == ["resident", "op_by_op"] and sec["reference"] == "ours/resident"  # honoured
    assert all(not e["error"] and len(e["generated_token_ids"]) == 2 for e in ours)
    assert ours[0]["generated_token_ids"] == ours[1]["generated_token_ids"]
    assert ours[0]["k"] == 4 and ours[0]["tuning"]["wg"] == 64          # the block loop's K and kernel shape, recorded
    assert "k" not in ours[1] and "tuning" not in ours[1]
    assert "wllama failed to load" in page.inner_text("#panel-compare")
    assert page.locator("#cmp-table table tbody tr").count() == len(sec["engines"])
    assert page.external_requests == [] and page_text_has_no_traceback(page)


@pytest.mark.parametrize("bad,message", [({"runs": "lots"}, "runs must be a whole number"),
                                         ({"ramp": "2"}, "ramp must be 1 or 0"),
                                         ({"depth": "0"}, "depth (blocks in flight) must be between 1 and 8")])
def test_bad_param_is_a_message(page, server, bad, message):
    assert open_lab(page, server, query(**bad), timeout_s=300) == "error"
    assert message in page.inner_text("#error")
    assert page_text_has_no_traceback(page)
