"""Confidence intervals over queries, so a leaderboard says how sure a mean score is.

Queries are the sampling unit: a benchmark's queries are one draw from all the
queries it could have held, and the interval says how much the mean would move
with another draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def bootstrap_ci(
    values: Sequence[float], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float | None, float | None]:
    """``(mean, low, high)``: the mean of per-query ``values`` and its percentile-bootstrap interval.

    The percentile interval rather than scipy's default BCa: BCa adds a
    jackknife pass per call and is unstable when most resamples are equal,
    which small benchmarks with many 0/1 scores produce. A single value
    gives no interval at all (``low`` and ``high`` None): one query says
    nothing of how another draw would move the mean, and ``[x, x]`` would claim
    certainty. With several values all equal there is no spread to resample and
    the interval is the mean itself. The same ``seed`` gives the same interval.
    """
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(f"bootstrap_ci needs a non-empty 1-D sequence of values, got shape {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("bootstrap_ci: values must be finite")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    mean = float(data.mean())
    if data.size == 1:
        return mean, None, None
    if np.all(data == data[0]):
        return mean, mean, mean
    result = stats.bootstrap(
        (data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
        method="percentile", vectorized=True, rng=np.random.default_rng(seed),
    )
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def clustered_ratio_ci(
    numerators: Sequence[float], denominators: Sequence[float], *, n_resamples: int = 1000, confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None, float | None]:
    """``(ratio, low, high)`` of ``sum(numerators) / sum(denominators)``, resampling clusters with replacement.

    One entry per cluster — a question, whose languages are not independent
    draws: a question that is easy in one language tends to be easy in all,
    so resampling (question, language) rows as if independent would make the
    interval too narrow.  Each resample draws multinomial counts over the
    clusters and reweights their sums, all resamples in one matrix product.
    A mean is the ratio with denominators of 1.  A ratio whose denominator is
    0 is undefined (None); resamples with a zero denominator are left out.
    With fewer than two clusters that carry weight (a positive denominator)
    there is nothing to resample: every draw repeats the one cluster, so the
    interval is undefined (None, None) rather than the point [x, x], which
    would read as certainty.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError(f"numerators and denominators must be 1-D and alike, got {num.shape} and {den.shape}")
    if num.size == 0 or den.sum() == 0:
        return None, None, None
    ratio = float(num.sum() / den.sum())
    if np.count_nonzero(den > 0) < 2:
        return ratio, None, None
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(num.size, np.full(num.size, 1.0 / num.size), size=n_resamples)
    totals = counts @ den
    stats_ = (counts @ num)[totals > 0] / totals[totals > 0]
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(stats_, [tail, 100 - tail])
    return ratio, float(low), float(high)
