"""Statistics on data with known answers: medians, least squares, bootstrap intervals, the ratio."""
import random

import pytest

from app.bench import stats


def test_median_odd_even_and_unsorted():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.median([7]) == 7
    assert stats.median([5.0, -1.0]) == 2.0
    with pytest.raises(ValueError):
        stats.median([])


def test_linfit_exact_line():
    xs = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    ys = [3000.0 + 25.5 * x for x in xs]
    slope, intercept, r2 = stats.linfit(xs, ys)
    assert slope == pytest.approx(25.5, rel=1e-12)
    assert intercept == pytest.approx(3000.0, rel=1e-12)
    assert r2 == pytest.approx(1.0, abs=1e-12)


def test_linfit_known_noisy_answer():
    # y = 1, 3, 2 at x = 0, 1, 2: slope 0.5, intercept 1.5, SS_res 1.5, SS_tot 2 → r² 0.25
    slope, intercept, r2 = stats.linfit([0, 1, 2], [1, 3, 2])
    assert (slope, intercept) == pytest.approx((0.5, 1.5))
    assert r2 == pytest.approx(0.25)


def test_linfit_flat_and_degenerate():
    assert stats.linfit([1, 2, 3], [5, 5, 5]) == pytest.approx((0.0, 5.0, 1.0))
    with pytest.raises(ValueError):
        stats.linfit([2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        stats.linfit([1, 2], [1])


def _sample(n, seed=1):
    rng = random.Random(seed)
    return [100 + rng.gauss(0, 10) for _ in range(n)]


def test_bootstrap_contains_median_and_is_deterministic():
    xs = _sample(25)
    lo, hi = stats.bootstrap_ci(xs)
    assert lo <= stats.median(xs) <= hi
    assert lo < hi
    assert stats.bootstrap_ci(xs) == (lo, hi)
    # the mean's bootstrap distribution is continuous, so another seed visibly moves its interval
    assert stats.bootstrap_ci(xs, stat=lambda v: sum(v) / len(v), seed=1) != stats.bootstrap_ci(
        xs, stat=lambda v: sum(v) / len(v), seed=2)


def test_bootstrap_narrows_with_more_data():
    small = stats.bootstrap_ci(_sample(20))
    large = stats.bootstrap_ci(_sample(2000))
    assert (large[1] - large[0]) < (small[1] - small[0]) / 3
    assert large[0] <= 100 <= large[1]      # the true median of the population


def test_bootstrap_single_value_and_empty():
    assert stats.bootstrap_ci([4.0]) == (4.0, 4.0)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([])


def test_percentile_interpolates():
    assert stats.percentile([0, 10], 0.25) == 2.5
    assert stats.percentile([1, 2, 3, 4, 5], 0.5) == 3


def test_naive_over_sequential():
    assert stats.naive_over_sequential(1500.0, 120.0) == pytest.approx(12.5)
    assert stats.naive_over_sequential(1500.0, 0.0) is None
    assert stats.naive_over_sequential(1500.0, -3.0) is None


def test_bootstrap_slopes_exact_and_noisy():
    exact = {n: [100.0 + 3.0 * n] * 5 for n in (1, 2, 4, 8)}
    lo, hi = stats.interval(stats.bootstrap_slopes(exact, resamples=200))
    assert lo == pytest.approx(3.0) and hi == pytest.approx(3.0)
    rng = random.Random(3)
    noisy = {n: [100.0 + 3.0 * n + rng.gauss(0, 5) for _ in range(20)] for n in (1, 4, 16, 64)}
    boot = stats.bootstrap_slopes(noisy, resamples=300, seed=11)
    lo, hi = stats.interval(boot)
    assert lo < 3.0 < hi and hi - lo < 1.0
    assert boot == stats.bootstrap_slopes(noisy, resamples=300, seed=11)
    with pytest.raises(ValueError):
        stats.bootstrap_slopes({1: [1.0], 2: []})
