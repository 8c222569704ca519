"""app.compare_report: agreement, summaries, honest WebGPU labels, validation, table and CSV (CPython)."""
import copy
import json

import pytest

from app import compare_report as cr
from app import report


def row(engine="wllama", mode="cpu", threads=1, on_gpu=False, rate=10.0, ids=(1, 2, 3), **kw):
    return {"engine": engine, "mode": mode, "threads": threads, "on_gpu": on_gpu, "decode_tok_per_s": rate,
            "ttft_ms": 100.0, "generated_token_ids": list(ids), "agree_prefix": None, "note": "", "error": None,
            "load_ms": 1000.0, "decode_ci": [rate - 1, rate + 1] if rate else None, **kw}


def section():
    engines = [row("ours", "token_pass", None, True, 4.0, dispatches_per_token=485),
               row("ours", "op_by_op", None, True, 2.0, dispatches_per_token=485),
               row("wllama", "webgpu→cpu", 2, False, 16.0, (1, 2, 9), note=cr.FALLBACK_F16,
                   wllama={"offloaded": None}),
               row("wllama", "cpu", 1, False, 8.0)]
    cr.add_comparisons(engines, 0)
    return {"prompt": "1 2 3", "prompt_tokens": 5, "n_ctx": 256, "max_new_tokens": 3, "runs": 3,
            "reference": "ours/token_pass", "engines": engines, "notes": ["a note"],
            "wllama": {"version": "b12211-7d7f028"}}


def test_agree_prefix():
    assert cr.agree_prefix([1, 2, 3], [1, 2, 3]) == 3
    assert cr.agree_prefix([1, 2, 4], [1, 2, 3]) == 2
    assert cr.agree_prefix([5], [1, 2]) == 0
    assert cr.agree_prefix([1, 2], [1, 2, 3]) == 2  # stopped early (EOS): agrees on all it made
    assert cr.agree_prefix(None, [1]) is None and cr.agree_prefix([1], None) is None


def test_summarise_median_and_ci():
    s = cr.summarise([10.0, 12.0, 11.0, None])
    assert s["median"] == 11.0 and s["ci"][0] <= 11.0 <= s["ci"][1]
    assert cr.summarise([7.0]) == {"median": 7.0, "ci": [7.0, 7.0]}
    assert cr.summarise([None]) == {"median": None, "ci": None}


@pytest.mark.parametrize("placement,caps,on_gpu,needle", [
    ({"offloaded": [31, 31]}, {"webgpu": True, "shader_f16": True}, True, "all 31 layers"),
    ({"offloaded": [10, 31]}, {"webgpu": True, "shader_f16": True}, False, "partial"),
    ({"offloaded": None}, {"webgpu": True, "shader_f16": False}, False, cr.FALLBACK_F16),
    ({"offloaded": None}, {"webgpu": False}, False, "no navigator.gpu"),
    ({"offloaded": None}, {"webgpu": True, "shader_f16": True}, False, "offloaded no layers"),
    ({"offloaded": [0, 31]}, {"webgpu": True, "shader_f16": False}, False, cr.FALLBACK_F16),
])
def test_webgpu_label_is_never_a_gpu_run_without_the_offload_line(placement, caps, on_gpu, needle):
    got, note = cr.webgpu_label(placement, caps)
    assert got is on_gpu and needle in note
    assert on_gpu or note.startswith("WebGPU")


def test_add_comparisons_agree_and_speedup():
    s = section()
    ours, opp, wgpu, cpu1 = s["engines"]
    assert ours["agree_prefix"] == 3 and ours["ours_speedup"] == 1.0
    assert opp["ours_speedup"] == 2.0
    assert wgpu["agree_prefix"] == 2 and wgpu["ours_speedup"] == 0.25
    assert cpu1["ours_speedup"] == 0.5


def test_add_comparisons_without_reference():
    engines = [row("ours", "token_pass", error="boom"), row()]
    cr.add_comparisons(engines, None)
    assert all(e["agree_prefix"] is None and e["ours_speedup"] is None for e in engines)


def test_failed_row_has_no_agreement():
    engines = [row("ours", "token_pass"), row(error="wllama failed to load: x", ids=())]
    cr.add_comparisons(engines, 0)
    assert engines[1]["agree_prefix"] is None


def test_validate_accepts_section_and_full_doc():
    s = section()
    cr.validate(s, "compare")
    doc = {**report.new_results({"adapter": {}}), "compare": s}
    assert report.parse(json.dumps(doc))["compare"]["engines"][2]["mode"] == "webgpu→cpu"


@pytest.mark.parametrize("mutate,needle", [
    (lambda s: s["engines"][0].pop("agree_prefix"), "missing 'agree_prefix'"),
    (lambda s: s.update(engines=[]), "non-empty list"),
    (lambda s: s["engines"][2].update(on_gpu=True), "no full GPU offload"),
    (lambda s: s["engines"][2].update(on_gpu=True, wllama={"offloaded": [12, 31]}), "no full GPU offload"),
    (lambda s: s["engines"][1].update(on_gpu="yes"), "on_gpu must be true or false"),
    (lambda s: s["engines"][1].update(decode_tok_per_s=-1), "decode_tok_per_s"),
    (lambda s: s["engines"][1].update(decode_tok_per_s="fast"), "decode_tok_per_s"),
    (lambda s: s["engines"][1].update(generated_token_ids=[1, "2"]), "list of integers"),
    (lambda s: s["engines"][1].update(agree_prefix=9), "agree_prefix"),
    (lambda s: s["engines"][1].update(note=None), "note must be text"),
])
def test_validate_rejects_with_a_clear_message(mutate, needle):
    s = copy.deepcopy(section())
    mutate(s)
    with pytest.raises(report.ResultsError, match=needle):
        cr.validate(s, "compare")


def test_wllama_gpu_claim_with_full_offload_is_valid():
    s = section()
    s["engines"][2].update(on_gpu=True, mode="webgpu", wllama={"offloaded": [31, 31]})
    cr.validate(s, "compare")


def test_table_and_csv():
    s = section()
    s["engines"].append(row(mode="cpu", threads=2, rate=None, ids=(), error="wllama failed to load: Aborted(x)"))
    cr.add_comparisons(s["engines"], 0)
    text = report.format_tables({**report.new_results({}), "compare": s})
    assert "Compare: our engine vs wllama b12211-7d7f028" in text
    assert cr.FALLBACK_F16 in text and "FAILED: wllama failed to load: Aborted(x)" in text
    assert "3/3" in text and "2/3" in text and "* a note" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("wllama")]
    assert all("n/a" in ln for ln in lines)  # no dispatch count for wllama, never a guess
    rows = cr.csv_rows(s)
    assert rows[0] == cr.HEADERS and len(rows) == 1 + len(s["engines"])
    csv = report.to_csv({**report.new_results({}), "compare": s})
    assert csv.splitlines()[0].startswith("compare,Engine,Mode")
