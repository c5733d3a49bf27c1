"""Confidence intervals over queries, so a leaderboard says how sure a mean score is.

Queries are the sampling unit: a benchmark's queries are one draw from all the
queries it could have held, and the interval says how much the mean would move
with another draw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
    counts = cluster_resamples(num.size, n_resamples, seed)
    totals = counts @ den
    low, high = percentile_interval((counts @ num)[totals > 0] / totals[totals > 0], confidence)
    return ratio, low, high


def clustered_statistic_ci(
    tables: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], *, n_resamples: int = 1000,
    confidence: float = 0.95, seed: int = 0,
) -> tuple[float | None, float | None, float | None]:
    """``(value, low, high)`` of ``statistic`` over the sum of per-cluster count tables, resampling clusters.

    For statistics that are not a ratio of two sums (an agreement coefficient
    from a contingency table): ``tables`` holds one row of counts per cluster
    (shape ``(clusters, k)``), each resample sums the rows it draws, as
    :func:`clustered_ratio_ci` does, and ``statistic`` maps a stack of summed
    rows ``(m, k)`` to ``m`` values, NaN where undefined (such resamples are
    left out; an undefined value is None).  Fewer than two clusters, or no
    resample where the statistic is defined, give no interval.
    """
    data = np.asarray(tables, dtype=float)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError(f"clustered_statistic_ci needs a non-empty (clusters, k) table, got shape {data.shape}")
    point = float(statistic(data.sum(axis=0)[None, :])[0])
    if np.isnan(point):
        return None, None, None
    if data.shape[0] < 2:
        return point, None, None
    values = statistic(cluster_resamples(data.shape[0], n_resamples, seed) @ data)
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return point, None, None
    low, high = percentile_interval(defined, confidence)
    return point, low, high


def cluster_resamples(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, n_clusters)`` counts of how often each resample draws each cluster, with replacement:
    a resample's sums are then one matrix product away."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_resamples)


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` share of resampled ``values``: the percentile bootstrap interval."""
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
