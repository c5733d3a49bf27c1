"""A leaderboard value, whatever protocol computed it: a metric of one slice of a benchmark with its interval,
and how many of the slice's responses were answered, failed, or lack a judge's verdict.

The counts travel with every value so that a number is never read without
knowing what it stands on: a model whose endpoint was down scores 0 on every
item, and the ``failed`` column says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

ALL = "all"  # the slice over every language, or every subset


@dataclass(frozen=True)
class Tally:
    """The responses a slice's value was computed from: ``answered`` (status ok), ``failed`` (any other status:
    call or parse failed, stopped by the budget) and ``judge_failed`` (answered, but some judge of the panel gave
    no verdict: its call failed, its reply was unreadable, or the budget stopped it)."""

    answered: int = 0
    failed: int = 0
    judge_failed: int = 0

    @classmethod
    def of(cls, responses: Iterable[tuple[bool, bool]]) -> Tally:
        """The tally of ``(answered, judge_failed)`` per response."""
        answered = failed = judge_failed = 0
        for ok, misjudged in responses:
            answered += ok
            failed += not ok
            judge_failed += ok and misjudged
        return cls(answered, failed, judge_failed)


@dataclass(frozen=True)
class Score:
    """``metric`` of the (setting, language, subset) slice; ``n`` is what it averages over (pairs, answers).

    ``answered``, ``failed`` and ``judge_failed`` count the slice's responses (see :class:`Tally`); None until
    a scorer or :func:`tasks.metrics.leaderboard.score_model` fills them.
    """

    setting: str
    lang: str
    subset: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    answered: int | None = None
    failed: int | None = None
    judge_failed: int | None = None

    def counted(self, tally: Tally) -> Score:
        """This score with the slice's response counts."""
        return dataclasses.replace(self, answered=tally.answered, failed=tally.failed, judge_failed=tally.judge_failed)


def as_percent(triple: tuple[float | None, float | None, float | None]) -> tuple[float | None, ...]:
    """A share and its interval (0–1, None where undefined) on the leaderboards' scale, 0–100."""
    return tuple(None if v is None else 100.0 * v for v in triple)
