"""Reading pairwise judges: the verdict of one comparison, and how consistent a judge is across both orders.

A judge sees two answers, the first shown as A and the second as B, and
names the better one or a tie (read by :func:`tasks.llm.verdicts.read_pairwise`).

Every pair is judged in both orders.  Two numbers describe a judge:
``consistency`` — the share of pairs whose two orders agree on the winner
(or on a tie) — and ``first_position_rate`` — the share of decisive verdicts
that chose the answer shown first (0.5 for a judge without position bias).
Both orders also enter the ratings as separate battles; a pair whose two
orders pick opposite winners (the judge followed the position) is two ties
there, worth what the tie policy says (:func:`tasks.arena.bradley_terry.order_flips`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tasks.arena.bradley_terry import Battle


@dataclass(frozen=True)
class OrderedVerdict:
    """One judgement: on ``query_id``, ``first`` was shown as A, ``second`` as B, and the judge said ``verdict``."""

    query_id: str
    lang: str
    first: str
    second: str
    verdict: str  # a | b | tie

    def winner(self) -> str | None:
        """The system the verdict favours, None for a tie."""
        return {"a": self.first, "b": self.second}.get(self.verdict)

    def battle(self) -> Battle:
        return Battle(self.query_id, self.lang, self.first, self.second, self.verdict)


def judge_agreement(verdicts: Iterable[OrderedVerdict]) -> dict[str, float | int | None]:
    """``{"pairs", "consistency", "first_position_rate", "decisive"}`` over the pairs judged in both orders."""
    verdicts = list(verdicts)
    orders: dict[tuple[str, str, frozenset[str]], list[OrderedVerdict]] = defaultdict(list)
    for verdict in verdicts:
        orders[(verdict.lang, verdict.query_id, frozenset((verdict.first, verdict.second)))].append(verdict)
    both = [pair for pair in orders.values() if len({v.first for v in pair}) == 2]  # each system shown first once
    agreeing = sum(len({v.winner() for v in pair}) == 1 for pair in both)
    decisive = [v for v in verdicts if v.verdict != "tie"]
    return {
        "pairs": len(both),
        "consistency": agreeing / len(both) if both else None,
        "decisive": len(decisive),
        "first_position_rate": sum(v.verdict == "a" for v in decisive) / len(decisive) if decisive else None,
    }
