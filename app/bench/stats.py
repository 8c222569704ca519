"""Statistics for the benchmarks: medians, bootstrap confidence intervals, least-squares lines.

Pure standard library, so the same code runs in the page (Pyodide) and in the CPython unit tests.
"""
from __future__ import annotations

import math
import random

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601


def median(xs) -> float:
    """Median; the mean of the two middle values for an even count.  Raises ValueError when empty."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return float(s[mid]) if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def percentile(sorted_xs, q: float) -> float:
    """q in [0, 1], linear interpolation between closest ranks (numpy's default 'linear')."""
    if not sorted_xs:
        raise ValueError("percentile of no values")
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def bootstrap_ci(xs, stat=median, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of stat(xs).

    Resamples xs with replacement `resamples` times with a seeded generator, so the same data always
    gives the same interval.  One value gives a zero-width interval (there is nothing to resample).
    """
    xs = list(xs)
    if not xs:
        raise ValueError("bootstrap of no values")
    if len(xs) == 1:
        return float(xs[0]), float(xs[0])
    rng = random.Random(seed)
    k = len(xs)
    stats = sorted(stat(rng.choices(xs, k=k)) for _ in range(resamples))
    alpha = (1.0 - level) / 2.0
    return percentile(stats, alpha), percentile(stats, 1.0 - alpha)


def linfit(xs, ys) -> tuple[float, float, float]:
    """Ordinary least squares y = intercept + slope * x.  Returns (slope, intercept, r²).

    r² = 1 - SS_res / SS_tot; it is 1.0 for a perfect fit (and when every y is equal and fitted exactly).
    Needs at least two distinct x values.
    """
    xs = [float(x) for x in xs]
    ys = [float(y) for y in ys]
    if len(xs) != len(ys):
        raise ValueError("linfit: xs and ys differ in length")
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        raise ValueError("linfit needs at least two distinct x values")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    if ss_tot == 0.0:
        r2 = 1.0 if ss_res <= 1e-12 * max(1.0, my * my) else 0.0
    else:
        r2 = 1.0 - ss_res / ss_tot
    return slope, intercept, r2


SLOPE_RESAMPLES = 1000


def bootstrap_slopes(groups: dict, resamples: int = SLOPE_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> list[float]:
    """Bootstrap distribution of the least-squares slope of median(y) against x.

    groups: {x: [y, ...]} (repetitions at each x).  Each resample redraws every x's repetitions with
    replacement, takes their median and refits, so the spread reflects the noise at each point.
    """
    xs = sorted(x for x, ys in groups.items() if ys)
    if len(xs) < 2:
        raise ValueError("a slope needs at least two x values with data")
    rng = random.Random(seed)
    out = []
    for _ in range(resamples):
        meds = [median(rng.choices(groups[x], k=len(groups[x]))) for x in xs]
        out.append(linfit(xs, meds)[0])
    return out


def interval(samples, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of a bootstrap distribution."""
    s = sorted(samples)
    alpha = (1.0 - level) / 2.0
    return percentile(s, alpha), percentile(s, 1.0 - alpha)


def naive_over_sequential(naive_slope_us: float, sequential_slope_us: float) -> float | None:
    """How many times the naive method overstates the cost of one dispatch.

    naive_slope_us: least-squares slope of total time against N in naive mode (each dispatch is
    submitted and awaited on its own, so the slope is the naive method's cost per operation).
    sequential_slope_us: the slope in sequential mode (N submits, one await), the paper's per-dispatch
    cost.  Both from the same dtype and driver (the suite uses f32 and the Python driver).
    None when the sequential slope is not positive (no meaningful ratio).
    """
    if sequential_slope_us is None or naive_slope_us is None or not sequential_slope_us > 0:
        return None
    return naive_slope_us / sequential_slope_us
