"""The dispatch suite's schedule and analysis (pure parts of app/bench/dispatch*.py)."""
import pytest

from app.bench import dispatch_model as M


def test_naive_cap_follows_the_await_cost_and_budget():
    full = M.settings(False)
    assert M.cap_naive(full, 300.0, 3)["naive_n_max"] == 1024          # fast awaits: every N
    assert "naive_note" not in M.cap_naive(full, 300.0, 3)
    slow = M.cap_naive(full, 2000.0, 2)                                  # SwiftShader: 2 ms per await
    assert slow["naive_n_max"] == 512 and "N=512" in slow["naive_note"] and "2000 µs" in slow["naive_note"]
    cost = 2 * 20 * 2000.0 * sum(n for n in full["n"] if n <= 512) / 1e6
    assert cost <= full["naive_budget_s"]
    assert M.cap_naive(full, 1e6, 2)["naive_n_max"] == full["naive_min_cap"]   # never below the minimum
    quick = M.cap_naive(M.settings(True), 2000.0, 2)
    assert quick["naive_n_max"] == 16 and quick["naive_await_us"] == 2000.0


def test_schedule_covers_every_point_every_round_in_shuffled_order():
    for quick in (False, True):
        cfg = M.cap_naive(M.settings(quick), 2000.0, 2)
        assert cfg["reps_per_visit"] * cfg["rounds"] >= 20
        series = M.series_list(["f32", "i32"], timestamps=True)
        pts = M.points(series, cfg)
        v = M.visits(pts, cfg)
        assert len(v) == len(pts) * cfg["rounds"]
        for r in range(cfg["rounds"]):
            assert sorted(p for rr, *p in v if rr == r) == sorted([list(p) for p in pts])
        first = [p for rr, *p in v if rr == 0]
        assert first != [list(p) for p in pts]          # shuffled, not grouped by mode
        assert v == M.visits(pts, cfg)                   # seeded: reproducible
        naive_n = {n for s, n in pts if s[0] == "naive"}
        assert max(naive_n) == cfg["naive_n_max"]
        assert ("naive_note" in cfg) == (cfg["naive_n_max"] < max(cfg["n"]))
        assert cfg["naive_n_max"] < max(cfg["n"])


def test_full_run_uses_every_power_of_two_to_1024():
    cfg = M.settings(False)
    assert cfg["n"] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def test_series_include_js_driver_and_gpu_only_with_timestamps():
    with_ts = M.series_list(["f32"], True)
    assert ("sequential", "f32", "js") in with_ts and ("one_pass", "f32", "js") in with_ts
    assert ("one_pass", "f32", "gpu") in with_ts
    assert ("one_pass", "f32", "gpu") not in M.series_list(["f32"], False)


def test_expected_counter_values():
    assert M.expected_value("f32", 123456) == 123456
    assert M.expected_value("i32", 7) == 7
    assert M.expected_value("f16", 1024) == 1024
    assert M.expected_value("f16", 1025) == 0
    assert M.expected_value("f16", 3000) == 3000 % 1025


def _samples():
    # total = intercept + slope * n exactly, three reps each
    lines = {("naive", "f32", "python"): (0.0, 1500.0), ("sequential", "f32", "python"): (3000.0, 120.0),
             ("sequential", "f32", "js"): (3000.0, 70.0), ("one_pass", "f32", "python"): (2000.0, 25.0),
             ("one_pass", "f32", "js"): (2000.0, 24.0)}
    return {s: {n: [a + b * n] * 3 for n in (1, 2, 4, 8)} for s, (a, b) in lines.items()}


def test_summarize_fits_and_ratio():
    rows, fits = M.summarize(_samples())
    assert len(rows) == 5 * 4 and all(r["reps"] == 3 for r in rows)
    seq = M.find_fit(fits, "sequential", "f32", "python")
    assert seq["slope_us"] == pytest.approx(120.0) and seq["intercept_us"] == pytest.approx(3000.0)
    assert seq["r2"] == pytest.approx(1.0)
    r1 = next(r for r in rows if r["mode"] == "sequential" and r["driver"] == "python" and r["n"] == 1)
    assert r1["per_dispatch_us"]["median"] == pytest.approx(3120.0)
    assert r1["per_dispatch_us"]["ci95"] == pytest.approx([3120.0, 3120.0])
    assert M.ratio(fits) == pytest.approx(1500.0 / 120.0)
    assert seq["slope_ci95"] == pytest.approx([120.0, 120.0])
    split = {d["mode"]: d["ffi_us_per_dispatch"] for d in M.driver_split(fits)}
    assert split == pytest.approx({"sequential": 50.0, "one_pass": 1.0})
    boots = {}
    M.summarize(_samples(), boots)
    with_ci = {d["mode"]: d["ffi_ci95"] for d in M.driver_split(fits, boots)}
    assert with_ci["sequential"] == pytest.approx([50.0, 50.0])


def test_summarize_skips_empty_points_and_single_point_series():
    rows, fits = M.summarize({("one_pass", "f32", "python"): {1: [10.0], 2: []}})
    assert [r["n"] for r in rows] == [1]
    assert fits == []                                   # one N cannot make a line


def test_quantization_detection():
    assert M.quantized([100_000 * k for k in (3, 7, 12, 20)]) is True
    assert M.quantized([123_456, 223_999, 300_000, 400_000]) is False
    assert M.quantized([100_000]) is None


def test_assemble_gpu_status():
    samples = {**_samples(), ("one_pass", "f32", "gpu"): {n: [20.0 * n] * 3 for n in (1, 2, 4)}}
    cfg = M.settings(True)
    sec = M.assemble(samples, cfg, [], True, [100_000 * k for k in range(1, 7)], [], 1.0)
    assert sec["gpu"]["status"] == "measured" and sec["gpu"]["quantized"] is True
    assert M.find_fit(sec["gpu"]["fits"], "one_pass", "f32", "gpu")["slope_us"] == pytest.approx(20.0)
    assert not any(f["driver"] == "gpu" for f in sec["fits"])     # GPU time never mixes with wall time
    zeros = M.assemble(samples, cfg, [], True, [0] * 6, [], 1.0)
    assert zeros["gpu"]["status"] == "unsupported" and "zeros" in zeros["gpu"]["reason"]
    none = M.assemble(_samples(), cfg, [], False, [], [], 1.0)
    assert none["gpu"] == {"status": "unsupported", "reason": "adapter lacks timestamp-query", "rows": [], "fits": []}
    assert [s["step"] for s in none["ladder"]][-1] == "GPU time" and none["ladder"][-1]["us_per_dispatch"] is None
