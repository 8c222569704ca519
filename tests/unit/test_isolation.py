"""Pure parts of the isolation experiment: splits, synthetic Q4_1 data, the numpy reference, the fit."""
import numpy as np
import pytest

from app.bench import isolation
from app.llm.gguf import GGML_Q4_1, _dequantize


@pytest.mark.parametrize("rows,k", [(4096, 1), (4096, 512), (1000, 7), (8, 8), (1024, 3)])
def test_splits_cover_every_row_once(rows, k):
    parts = isolation.splits(rows, k)
    assert len(parts) == k
    covered = [r for r0, n in parts for r in range(r0, r0 + n)]
    assert covered == list(range(rows))
    sizes = [n for _, n in parts]
    assert max(sizes) - min(sizes) <= 1


def test_splits_reject_impossible():
    with pytest.raises(ValueError):
        isolation.splits(4, 5)
    with pytest.raises(ValueError):
        isolation.splits(4, 0)


def test_k_values_powers_of_two_up_to_rows():
    assert isolation.k_values(4096, 512) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert isolation.k_values(16, 512) == [1, 2, 4, 8, 16]
    assert isolation.k_values(1024, 100) == [1, 2, 4, 8, 16, 32, 64]


def test_dequant_matches_gguf_reader():
    blocks = isolation.make_q4_1(6, 96, seed=3)
    raw = blocks.tobytes()
    oracle = _dequantize(memoryview(raw), GGML_Q4_1, 0, len(raw)).reshape(6, 96)
    np.testing.assert_array_equal(isolation.dequant_q4_1(blocks), oracle)


def test_make_q4_1_is_deterministic_and_rejects_bad_cols():
    a, b = isolation.make_q4_1(4, 64, seed=5), isolation.make_q4_1(4, 64, seed=5)
    assert a.shape == (4, 2, 20) and np.array_equal(a, b)
    with pytest.raises(ValueError):
        isolation.make_q4_1(4, 40)


def test_compare_exact_and_scaled():
    y1 = np.array([1.0, -2.0, 3.0], np.float32)
    ref = y1.astype(np.float64)
    c = isolation.compare(y1.copy(), y1, ref, np.ones(3))
    assert c == {"max_abs_diff_vs_k1": 0.0, "max_rel_err_vs_numpy": 0.0}
    y = y1.copy()
    y[1] += 0.5
    c = isolation.compare(y, y1, ref, np.full(3, 10.0))
    assert c["max_abs_diff_vs_k1"] == 0.5 and c["max_rel_err_vs_numpy"] == pytest.approx(0.05)


def test_fit_recovers_slope_in_us():
    ks = [1, 2, 4, 8, 16, 32]
    ms = [2.0 + 0.040 * k for k in ks]      # 40 µs per dispatch
    f = isolation.fit(ks, ms)
    assert f["slope_us"] == pytest.approx(40.0) and f["intercept_ms"] == pytest.approx(2.0) and f["r2"] == pytest.approx(1.0)


def test_summarize_shape():
    ks = [1, 2, 4]
    times = {"one_pass": {1: [1.0, 1.1, 0.9], 2: [1.1, 1.2, 1.0], 4: [1.3, 1.4, 1.2]},
             "sequential": {1: [1.0, 1.0, 1.0], 2: [2.0, 2.0, 2.0], 4: [4.0, 4.0, 4.0]}}
    checks = [{"k": k, "max_abs_diff_vs_k1": 0.0, "max_rel_err_vs_numpy": 1e-7} for k in ks]
    out = isolation.summarize(ks, times, checks, {"sequential_us": 900.0, "one_pass_us": 30.0, "source": "x"},
                              gpu_ms=[0.5, 0.5, 0.5], shape=(64, 64))
    assert out["k"] == ks and out["ms"] == [1.0, 1.1, 1.3]
    assert out["slope_us"] == pytest.approx(out["series"]["one_pass"]["slope_us"])
    assert out["sequential_slope_us"] == pytest.approx(1000.0)
    assert out["sequential_per_dispatch_us"] == 900.0 and out["one_pass_per_dispatch_us"] == 30.0
    assert out["all_splits_identical"] is True
    assert "gpu_slope_us" not in out                       # constant GPU times: no line to fit
    assert out["weight_bytes"] == 64 * 2 * 20
    checks[1]["max_abs_diff_vs_k1"] = 1e-3
    assert isolation.summarize(ks, times, checks, {})["all_splits_identical"] is False
