"""Reading pairwise judges: the verdict of one comparison, and how consistent a judge is across both orders.

A judge sees two answers, the first shown as A and the second as B, and
names the better one or a tie (read by :func:`tasks.llm.verdicts.read_pairwise`).

Every pair is judged in both orders.  Two numbers describe a judge:
``consistency`` — the share of pairs whose two orders agree on the winner
(or on a tie) — and ``first_position_rate`` — the share of decisive verdicts
that chose the answer shown first (0.5 for a judge without position bias).
Both count only the judge's own verdicts: a forfeit (a system without an
answer loses without a judge call) and a battle the judge gave no verdict on
(a failed call, an unreadable reply, a call the budget stopped) say nothing
about the judge, so they are left out and counted beside the numbers, and a
number with nothing to count is None, never a neutral-looking 0.5.
Both orders also enter the ratings as separate battles; a pair whose two
orders pick opposite winners (the judge followed the position) is two ties
there, worth what the tie policy says (:func:`tasks.arena.bradley_terry.order_flips`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tasks.arena.bradley_terry import Battle, order_flips


@dataclass(frozen=True)
class OrderedVerdict:
    """One battle: on ``query_id``, ``first`` was shown as A, ``second`` as B, and it ended in ``verdict``.

    ``status`` is the battle's (``ok``: the judge's verdict; ``forfeit``: decided without the judge; another
    status: no verdict, ``verdict`` None).
    """

    query_id: str
    lang: str
    first: str
    second: str
    verdict: str | None  # a | b | tie
    status: str = "ok"

    def winner(self) -> str | None:
        """The system the verdict favours, None for a tie."""
        return {"a": self.first, "b": self.second}.get(self.verdict or "")

    def battle(self) -> Battle:
        """What the ratings read of a rated battle (a verdict or a forfeit)."""
        if self.verdict is None:
            raise ValueError(f"battle {self} has no verdict to rate")
        return Battle(self.query_id, self.lang, self.first, self.second, self.verdict)


def judge_agreement(verdicts: Iterable[OrderedVerdict]) -> dict[str, float | int | None]:
    """The judge's consistency and first-position rate over its own verdicts (see the module notes).

    ``judged_pairs``: pairs the judge decided in both orders (consistency's denominator);
    ``decisive_verdicts``: its verdicts that picked a side (the first-position rate's); ``order_flips``: pairs
    whose two orders picked opposite winners; ``forfeits`` and ``no_verdict``: the battles left out.  The keys are
    the columns of ``arena_ratings`` (sql/021), so a stored row reads as one.
    """
    verdicts = list(verdicts)
    judged = [verdict for verdict in verdicts if verdict.status == "ok"]
    forfeits = sum(verdict.status == "forfeit" for verdict in verdicts)
    orders: dict[tuple[str, str, frozenset[str]], list[OrderedVerdict]] = defaultdict(list)
    for verdict in judged:
        orders[(verdict.lang, verdict.query_id, frozenset((verdict.first, verdict.second)))].append(verdict)
    both = [pair for pair in orders.values() if len({v.first for v in pair}) == 2]  # each system shown first once
    agreeing = sum(len({v.winner() for v in pair}) == 1 for pair in both)
    decisive = [v for v in judged if v.verdict != "tie"]
    return {
        "judged_pairs": len(both),
        "consistency": agreeing / len(both) if both else None,
        "decisive_verdicts": len(decisive),
        "first_position_rate": sum(v.verdict == "a" for v in decisive) / len(decisive) if decisive else None,
        "order_flips": len(order_flips([verdict.battle() for verdict in judged])) // 2,
        "forfeits": forfeits,
        "no_verdict": len(verdicts) - len(judged) - forfeits,
    }


def agreement_text(agreement: Mapping[str, float | int | None]) -> str:
    """The judge's statistics in words, each with what it counts; n/a where nothing was decided."""
    def share(value: float | int | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    left_out = [f"{what} {agreement[key]}" for key, what in (("forfeits", "forfeits (no judge call)"),
                                                               ("no_verdict", "battles without a verdict"))
                if agreement[key]]
    return (f"judge consistency {share(agreement['consistency'])} over {agreement['judged_pairs']} pairs judged in both"
            f" orders ({agreement['order_flips']} order flips, rated as ties); first shown chosen in"
            f" {share(agreement['first_position_rate'])} of {agreement['decisive_verdicts']} decisive verdicts"
            + (f"; left out: {', '.join(left_out)}" if left_out else ""))
