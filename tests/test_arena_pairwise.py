"""A pairwise judge's consistency and position bias over both orders (its replies: tests/test_verdict_replies.py)."""

from __future__ import annotations

import math

import pytest

from tasks.arena.bradley_terry import fit, ratings, weighted_battles
from tasks.arena.pairwise import OrderedVerdict, judge_agreement


def _both(query: str, x: str, y: str, x_first: str, y_first: str) -> list[OrderedVerdict]:
    """The pair judged with x shown first (verdict ``x_first``) and with y shown first (``y_first``)."""
    return [OrderedVerdict(query, "en", x, y, x_first), OrderedVerdict(query, "en", y, x, y_first)]


def test_consistency_and_first_position_rate_are_counted_over_both_orders() -> None:
    verdicts = (_both("1", "p", "q", "a", "b")      # p wins in both orders: consistent
                + _both("2", "p", "q", "a", "a")    # whoever is shown first wins: inconsistent
                + _both("3", "p", "q", "tie", "tie")  # a tie both ways: consistent
                + _both("4", "p", "q", "b", "a")    # q wins in both orders: consistent
                + [OrderedVerdict("5", "en", "p", "q", "a")])  # one order only: not a pair
    agreement = judge_agreement(verdicts)
    assert agreement["pairs"] == 4 and agreement["consistency"] == 3 / 4
    # decisive verdicts: a, b, a, a, b, a, a → 5 of 7 chose the answer shown first
    assert agreement["decisive"] == 7 and agreement["first_position_rate"] == pytest.approx(5 / 7)


def test_both_orders_enter_the_ratings_and_an_order_flip_is_two_ties() -> None:
    # p wins every pair in both orders, except one query where the judge just prefers the first answer
    verdicts = [v for n in range(40) for v in _both(str(n), "p", "q", "a", "b")] + _both("x", "p", "q", "a", "a")
    battles = [v.battle() for v in verdicts]
    # half: the flip is two ties, half a win each: 80 + 1 to 1 → the fitted gap is ln 81
    rows = weighted_battles(battles, "half")
    beta = dict(zip(rows.models, fit(2, rows.winner, rows.loser, rows.weight), strict=True))
    assert beta["p"] - beta["q"] == pytest.approx(math.log(81), abs=1e-3)
    half = ratings(battles, bootstrap=20, ties="half")
    assert (half["n_battles"], half["order_flips"]) == (82, 1) and half["models"]["p"]["rank_high"] == 1
    # drop: the flip is dropped, so q never beat p (a win for q in one order no longer counts): p is unbounded above
    dropped = ratings(battles, bootstrap=20, ties="drop")["models"]
    assert (dropped["p"]["rating"], dropped["p"]["unbounded"], dropped["q"]["unbounded"]) == (None, "high", "low")
