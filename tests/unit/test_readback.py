"""The readback-latency part of the dispatch suite (pure parts of app/bench/readback.py and its report rows)."""
import copy
import json

import pytest

from app import report
from app.bench import readback as RB
from test_report import _doc


def test_order_runs_every_strategy_once_a_round_shuffled_and_reproducible():
    plan = RB.order(5, 4)
    assert [slot for _, slot in plan] == list(range(20))            # one timestamp pair per trial
    for r in range(4):
        assert sorted(i for i, _ in plan[5 * r:5 * r + 5]) == list(range(5))
    assert [i for i, _ in plan[:5]] != list(range(5)) or [i for i, _ in plan[5:10]] != list(range(5))
    assert plan == RB.order(5, 4)
    assert RB.order(5, 4, seed=1) != plan


def test_size_aims_at_the_target_and_stays_in_bounds():
    assert RB.size(6.0, 256, 3.0) == 128
    assert RB.size(0.5, 256, 3.0) == 1536
    assert RB.size(1e-4, 256, 3.0) == 8192 and RB.size(1e4, 256, 3.0) == 16
    assert RB.size(0.0, 256) == 256 and RB.size(None, 256) == 256        # no probe time: keep the probe's size


def test_strategy_spec_gives_the_js_side_what_it_needs():
    assert RB.strategy_spec("none", 3.0) == {"strategy": "none", "everyUs": RB.EVERY_US, "leadMs": 0.0, "expectMs": 3.0}
    assert RB.strategy_spec("timed", 3.0)["strategy"] == "timed" and RB.strategy_spec("timed", 3.0)["leadMs"] == RB.LEAD_MS
    assert RB.strategy_spec("at_end", 2.5) == {"strategy": "timed", "everyUs": RB.EVERY_US, "leadMs": 0.0,
                                                "expectMs": 2.5}


def test_summarize_subtracts_each_trials_own_gpu_time():
    names = ("none", "submit")
    plan = [[0, 0], [1, 1], [1, 2], [0, 3]]
    wall = [4.0, 3.5, 3.6, 5.0]
    gpu = [3.0, 3.1, 3.0, 3.0]                                         # indexed by slot
    rows = RB.summarize(names, plan, wall, [0, 7, 9, 0], gpu)
    none, submit = rows
    assert none["overhead_ms"]["median"] == pytest.approx(1.5)          # (1.0 + 2.0) / 2
    assert submit["overhead_ms"]["median"] == pytest.approx(0.5)        # (0.4 + 0.6) / 2
    assert submit["saves_ms"] == pytest.approx(1.0) and none["saves_ms"] == 0
    assert submit["pokes"] == 8 and none["trials"] == 2
    lo, hi = none["overhead_ms"]["ci95"]
    assert lo <= none["overhead_ms"]["median"] <= hi


def test_summarize_without_timestamps_reports_wall_only():
    rows = RB.summarize(("none", "write"), [[0, 0], [1, 1]], [4.0, 4.2], [0, 3], None)
    assert all(r["overhead_ms"] is None and r["gpu_ms"] is None and r["saves_ms"] is None for r in rows)
    assert rows[1]["wall_ms"]["median"] == 4.2


@pytest.mark.parametrize("raw,want", [(None, RB.REPS), ("", RB.REPS), ("40", 40)])
def test_parse_reps(raw, want):
    assert RB.parse_reps(raw, False) == want
    assert RB.parse_reps(None, True) == RB.QUICK_REPS


@pytest.mark.parametrize("raw", ["1", "x", "501", "-3"])
def test_parse_reps_refuses_with_a_message(raw):
    with pytest.raises(ValueError, match="readback_reps"):
        RB.parse_reps(raw, False)


def _with_readback(gpu=True):
    doc = _doc()
    names = RB.STRATEGIES
    plan = RB.order(len(names), 3)
    wall = [3.0 + 0.1 * (k % 4) for k in range(len(plan))]
    rows = RB.summarize(names, plan, wall, [k % 3 for k in range(len(plan))], [2.5] * len(plan) if gpu else None)
    doc["dispatch"]["readback"] = {"method": "m", "dispatches": 1500, "expected_gpu_ms": 2.5, "reps": 3,
                                   "every_us": 50, "lead_ms": 1.9, "strategies": rows, "unsupported": []}
    return doc


def test_readback_section_validates_formats_and_exports():
    doc = _with_readback()
    report.validate(report.parse(json.dumps(doc), "x.json"))
    text = report.format_tables(doc)
    assert "Readback latency" in text and "1500 dispatches" in text
    for s in RB.STRATEGIES:
        assert f"\n{s} " in text
    lines = report.to_csv(doc).strip().splitlines()
    rb = [ln for ln in lines if ",readback_overhead," in ln]
    assert len(rb) == len(RB.STRATEGIES)
    width = len(lines[1].split(","))
    assert all(len(ln.split(",")) == width for ln in rb)


def test_readback_without_timestamps_says_unsupported_and_skips_are_shown():
    doc = _with_readback(gpu=False)
    report.validate(doc)
    assert "unsupported here" in report.format_tables(doc)
    doc["dispatch"]["readback"] = {"skipped": "readback=0"}
    report.validate(doc)
    assert "not measured (readback=0)" in report.format_tables(doc)


@pytest.mark.parametrize("mutate", [
    lambda rb: rb.update(strategies="x"),
    lambda rb: rb["strategies"][0].pop("wall_ms"),
    lambda rb: rb["strategies"][0].update(wall_ms={"median": "slow"}),
    lambda rb: rb["strategies"][0].update(strategy=3),
])
def test_malformed_readback_is_refused(mutate):
    doc = copy.deepcopy(_with_readback())
    mutate(doc["dispatch"]["readback"])
    with pytest.raises(report.ResultsError):
        report.validate(doc)
