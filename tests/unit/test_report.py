"""The results schema: the dispatch section validates, formats and exports; bad imports say why."""
import copy
import json

import pytest

from app import report
from app.bench import dispatch_model as M
from app.bench import dispatch_report as DR
from app.ui.results_io import parse_files


def _section():
    lines = {("naive", "f32", "python"): (0.0, 1500.0), ("sequential", "f32", "python"): (3000.0, 120.0),
             ("one_encoder", "f32", "python"): (3000.0, 35.0), ("one_pass", "f32", "python"): (2000.0, 25.0),
             ("sequential", "f32", "js"): (3000.0, 70.0), ("one_pass", "f32", "js"): (2000.0, 24.0),
             ("one_pass", "f32", "gpu"): (50.0, 21.0)}
    samples = {s: {n: [a + b * n + d for d in (-5.0, 0.0, 7.0)] for n in (1, 2, 4, 8)} for s, (a, b) in lines.items()}
    raw = [123_457 + 1000 * i for i in range(8)]
    return M.assemble(samples, M.settings(True), [{"dtype": "f16", "reason": "adapter lacks shader-f16"}], True,
                      raw, [{"dtype": "f32", "dispatches": 10, "expected": 10, "got": 10.0, "ok": True}], 1.0)


def _doc():
    doc = report.new_results({"user_agent": "test", "adapter": {"vendor": "v", "architecture": "a"}})
    doc["dispatch"] = _section()
    return doc


def test_assembled_section_is_valid_and_json_roundtrips():
    doc = _doc()
    report.validate(doc)
    again = report.parse(json.dumps(doc), "x.json")
    assert again["dispatch"]["rows"] == doc["dispatch"]["rows"]
    sec = doc["dispatch"]
    assert sec["naive_over_sequential"] == pytest.approx(1500 / 120, rel=0.01)
    assert sec["gpu"]["quantized"] is False
    assert [s["step"] for s in sec["ladder"]] == ["naive", "sequential", "one_encoder", "one_pass", "GPU time"]
    for key in ("mode", "dtype", "driver", "n", "per_dispatch_us", "reps"):
        assert key in sec["rows"][0]
    for key in ("mode", "dtype", "driver", "slope_us", "intercept_us", "r2"):
        assert key in sec["fits"][0]


def test_text_tables_show_series_ladder_ratio_and_unsupported():
    text = report.format_tables(_doc())
    for needle in ("mode", "slope µs", "intercept µs", "r²", "Ladder", "naive_over_sequential", "12.",
                   "f16: unsupported here (adapter lacks shader-f16)", "GPU time", "FFI cost", "one_encoder"):
        assert needle in text, needle


def test_csv_has_one_line_per_row_and_fit():
    doc = _doc()
    lines = report.to_csv(doc).strip().splitlines()
    kinds = [ln.split(",")[1] for ln in lines]
    assert kinds.count("row") == len(doc["dispatch"]["rows"])
    assert kinds.count("fit") == len(doc["dispatch"]["fits"])
    assert kinds.count("gpu_row") == len(doc["dispatch"]["gpu"]["rows"])
    assert "unsupported" in kinds and "naive_over_sequential" in kinds


def test_partial_section_may_lack_the_ratio():
    doc = _doc()
    doc["dispatch"]["naive_over_sequential"] = None
    doc["dispatch"].pop("naive_over_sequential_note", None)
    with pytest.raises(report.ResultsError, match="naive_over_sequential"):
        report.validate(doc)
    doc["dispatch"]["partial"] = True
    report.validate(doc)


def _broken(mutate):
    doc = _doc()
    mutate(doc)
    return json.dumps(doc)


BAD_FILES = {
    "not JSON": ("{ this is not json", "not valid JSON"),
    "empty": ("", "is empty"),
    "whitespace": ("  \n", "is empty"),
    "a list": ("[1, 2, 3]", "not a JSON object"),
    "foreign JSON": (json.dumps({"name": "some-package", "version": "1.0.0"}), "not a Dispatch Lab results file"),
    "wrong schema": (_broken(lambda d: d.update(schema="dispatchlab/99")), "not supported"),
    "no sections": (_broken(lambda d: d.pop("dispatch")), "holds no results"),
    "missing env": (_broken(lambda d: d.pop("env")), "'env'"),
    "missing rows": (_broken(lambda d: d["dispatch"].pop("rows")), "missing 'rows'"),
    "missing fits": (_broken(lambda d: d["dispatch"].pop("fits")), "missing 'fits'"),
    "rows not a list": (_broken(lambda d: d["dispatch"].update(rows={"a": 1})), "expected a list"),
    "row missing median": (_broken(lambda d: d["dispatch"]["rows"][0]["per_dispatch_us"].pop("median")),
                           "missing 'median'"),
    "median is a string": (_broken(lambda d: d["dispatch"]["rows"][0]["per_dispatch_us"].update(median="fast")),
                           "expected a number"),
    "n is a float": (_broken(lambda d: d["dispatch"]["rows"][0].update(n=2.5)), "positive integer"),
    "reps is zero": (_broken(lambda d: d["dispatch"]["rows"][0].update(reps=0)), "positive integer"),
    "ci is one number": (_broken(lambda d: d["dispatch"]["rows"][0]["per_dispatch_us"].update(ci95=[1.0])),
                         "[low, high]"),
    "ci reversed": (_broken(lambda d: d["dispatch"]["rows"][0]["per_dispatch_us"].update(ci95=[9.0, 1.0])),
                    "exceeds"),
    "unknown mode": (_broken(lambda d: d["dispatch"]["rows"][0].update(mode="turbo")), "'turbo' is not one of"),
    "slope is null": (_broken(lambda d: d["dispatch"]["fits"][0].update(slope_us=None)), "expected a number"),
    "slope is bool": (_broken(lambda d: d["dispatch"]["fits"][0].update(r2=True)), "expected a number"),
    "ratio is text": (_broken(lambda d: d["dispatch"].update(naive_over_sequential="12x")), "naive_over_sequential"),
    "unsupported lacks reason": (_broken(lambda d: d["dispatch"]["unsupported"][0].pop("reason")), "'reason'"),
    "gpu row broken": (_broken(lambda d: d["dispatch"]["gpu"]["rows"][0].pop("reps")), "gpu.rows[0]"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_get_a_clear_message_naming_the_file(case):
    text, needle = BAD_FILES[case]
    good, bad = parse_files([("earlier.json", text)])
    assert good == []
    assert len(bad) == 1 and needle in bad[0], bad
    assert "earlier.json" in bad[0]
    assert "Traceback" not in bad[0]


def test_mixed_import_keeps_the_good_files():
    ok = json.dumps(_doc())
    good, bad = parse_files([("a.json", ok), ("b.json", "nope"), ("c.json", ok)])
    assert [n for n, _ in good] == ["a.json", "c.json"]
    assert len(bad) == 1 and bad[0].startswith("b.json")
    assert good[0][1]["dispatch"]["rows"] == json.loads(ok)["dispatch"]["rows"]


def test_validator_does_not_mutate():
    doc = _doc()
    before = copy.deepcopy(doc)
    report.validate(doc)
    assert doc == before
