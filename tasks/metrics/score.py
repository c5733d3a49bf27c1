"""A leaderboard value, whatever protocol computed it: a metric of one slice of a benchmark with its interval."""

from __future__ import annotations

from dataclasses import dataclass

ALL = "all"  # the slice over every language, or every subset


@dataclass(frozen=True)
class Score:
    """``metric`` of the (setting, language, subset) slice; ``n`` is what it averages over (pairs, answers)."""

    setting: str
    lang: str
    subset: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
