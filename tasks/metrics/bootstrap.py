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
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of per-query ``values`` and its percentile-bootstrap interval.

    The percentile interval rather than scipy's default BCa: BCa adds a
    jackknife pass per call and is unstable when most resamples are equal,
    which small benchmarks with many 0/1 scores produce. With
    a single value, or all values equal, there is no spread to resample and
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
    if data.size == 1 or np.all(data == data[0]):
        return mean, mean, mean
    result = stats.bootstrap(
        (data,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
        method="percentile", vectorized=True, rng=np.random.default_rng(seed),
    )
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)
