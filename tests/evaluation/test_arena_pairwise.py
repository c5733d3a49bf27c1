"""A pairwise judge's consistency and position bias over both orders (its replies: tests/models/test_verdict_replies.py)."""

from __future__ import annotations

import math

import pytest

from tasks.arena.bradley_terry import fit, ratings, weighted_battles
from tasks.arena.pairwise import OrderedVerdict, agreement_text, judge_agreement


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
    assert agreement["judged_pairs"] == 4 and agreement["consistency"] == 3 / 4
    # decisive verdicts: a, b, a, a, b, a, a → 5 of 7 chose the answer shown first
    assert agreement["decisive_verdicts"] == 7 and agreement["first_position_rate"] == pytest.approx(5 / 7)


def _forfeited(query: str, answered: str, silent: str) -> list[OrderedVerdict]:
    """Both orders of a pair where ``silent`` had no answer: ``answered`` wins without a judge call."""
    return [OrderedVerdict(query, "en", answered, silent, "a", "forfeit"),
            OrderedVerdict(query, "en", silent, answered, "b", "forfeit")]


def test_forfeits_and_battles_without_a_verdict_say_nothing_about_the_judge() -> None:
    # a judge that always picks the answer shown first, on 17 pairs in both orders; 3 more queries where q had no
    # answer (6 forfeits, no judge call); one call that failed (no verdict)
    verdicts = ([v for n in range(17) for v in _both(str(n), "p", "q", "a", "a")]
                + [v for n in range(17, 20) for v in _forfeited(str(n), "p", "q")]
                + [OrderedVerdict("20", "en", "p", "q", None, "call_failed")])
    agreement = judge_agreement(verdicts)
    # every judged pair flips with the position: consistency 0/17 = 0.0, first shown chosen in 34 of 34 = 1.0
    # (over every rated battle it read 3/20 = 0.15 and (34 + 3)/40 = 0.925, the forfeits passing for verdicts)
    assert agreement == {"judged_pairs": 17, "consistency": 0.0, "decisive_verdicts": 34, "first_position_rate": 1.0,
                         "order_flips": 17, "forfeits": 6, "no_verdict": 1}
    assert agreement_text(agreement) == (
        "judge consistency 0.00 over 17 pairs judged in both orders (17 order flips, rated as ties); first shown"
        " chosen in 1.00 of 34 decisive verdicts; left out: forfeits (no judge call) 6, battles without a verdict 1")


def test_a_judge_that_decided_nothing_has_no_rates_never_a_neutral_one() -> None:
    # only ties, beside forfeits whose winners sit first and second alike (once read as 0.5, "no position bias")
    ties = [v for n in range(4) for v in _both(str(n), "p", "q", "tie", "tie")] + _forfeited("4", "p", "q")
    agreement = judge_agreement(ties)
    assert (agreement["decisive_verdicts"], agreement["first_position_rate"]) == (0, None)
    assert agreement["consistency"] == 1.0 and agreement["judged_pairs"] == 4  # a tie both ways agrees
    # no verdict at all (every call failed): both undefined, and the text says n/a with the counts
    failed = judge_agreement([OrderedVerdict(str(n), "en", "p", "q", None, "parse_failed") for n in range(3)])
    assert (failed["consistency"], failed["first_position_rate"], failed["no_verdict"]) == (None, None, 3)
    assert agreement_text(failed) == ("judge consistency n/a over 0 pairs judged in both orders (0 order flips, rated"
                                      " as ties); first shown chosen in n/a of 0 decisive verdicts; left out:"
                                      " battles without a verdict 3")


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
