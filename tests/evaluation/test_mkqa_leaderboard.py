"""MKQA's leaderboard rows from stored responses: failed responses score 0, abstentions and answers by the
protocol, and the answerable / unanswerable split beside the headline, in both modes.

Responses are written to the warehouse as inference stores them; the failed ones stand for an endpoint that
was down (status ``call_failed``) or a budget that ran out (``skipped_budget``).  Every expected number is
worked out by hand in the comments.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.imports.common import import_dataset
from tasks.metrics.leaderboard import ScoringConfig
from tasks.metrics.mkqa_data import read_gold
from tasks.metrics.mkqa_leaderboard import mkqa_scorer
from tasks.metrics.score import Score
from tasks.warehouse.db import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"
FAILED = None  # a response whose call failed: no answer text, status call_failed
# The sample's 8 English questions: six with a short answer (412 km, Petra Voss, 1871, yes, Jonas Halvar, 11
# alias "eleven"), then an unanswerable one and a long_answer one (both count as unanswerable).
DEAD = [FAILED] * 8
HALF = ["412 km", FAILED, "1871", "Yes.", FAILED, "eleven", "I don't know.", FAILED]
ABSTAIN = ["I don't know."] * 8


def _store(wh: Warehouse, model: str, answers: list[str | None], status: str = "call_failed") -> None:
    """``model``'s responses to the English questions in the sample's order; None is a failed response."""
    instances = wh.query("SELECT instance_id, item_id FROM instances WHERE benchmark = 'mk' AND lang = 'en'")
    by_item = {item: instance for instance, item in instances}
    with wh.transaction() as cur:
        for item, answer in zip([example.example_id for example in read_gold(SAMPLE)], answers, strict=True):
            cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, reason, answer,"
                        " citations, template, fingerprint) VALUES ('mk', ?, ?, 'closed_book', 'en', ?, ?, ?, [], 't',"
                        " 'f')", [by_item[item], model, "ok" if answer is not None else status,
                                  None if answer is not None else "endpoint unreachable", answer])


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[Warehouse]:
    wh = Warehouse(tmp_path / "home")
    import_dataset(wh, "mkqa", SAMPLE, "mk", ["en"])
    yield wh
    wh.close()


def _board(scores: list[Score], lang: str = "en") -> dict[str, tuple[float | None, int, int | None, int | None]]:
    return {s.metric: (None if s.value is None else round(s.value, 2), s.n, s.answered, s.failed)
            for s in scores if s.lang == lang}


@pytest.mark.parametrize("mode", ["improved", "official"])
def test_a_dead_endpoint_scores_zero_everywhere_and_is_counted(warehouse: Warehouse, mode: str) -> None:
    _store(warehouse, "down", DEAD)
    scores, _ = mkqa_scorer(warehouse, "mk", "down", [], ScoringConfig(mkqa_mode=mode, resamples=50))
    board = _board(scores)
    # Scored as abstentions, the 2 unanswerable questions would earn 1 each: 25 overall, like `abstain`.
    # Failed, every question scores 0 in every metric; all 8 (6 answerable, 2 not) are counted as failed.
    assert board == {"em": (0.0, 8, 0, 8), "f1": (0.0, 8, 0, 8),
                     "answerable_em": (0.0, 6, 0, 6), "answerable_f1": (0.0, 6, 0, 6),
                     "unanswerable_em": (0.0, 2, 0, 2), "unanswerable_f1": (0.0, 2, 0, 2)}
    # the pooled row (improved: over all locales; official: the macro average) says the same
    assert {metric: value[0] for metric, value in _board(scores, "all").items()} == dict.fromkeys(board, 0.0)


def test_a_budget_stop_is_a_failure_too(warehouse: Warehouse) -> None:
    _store(warehouse, "broke", DEAD, status="skipped_budget")
    scores, _ = mkqa_scorer(warehouse, "mk", "broke", [], ScoringConfig(resamples=50))
    assert _board(scores)["unanswerable_em"] == (0.0, 2, 0, 2)


@pytest.mark.parametrize("mode", ["improved", "official"])
def test_answers_abstentions_and_failures_side_by_side(warehouse: Warehouse, mode: str) -> None:
    _store(warehouse, "half", HALF)
    scores, _ = mkqa_scorer(warehouse, "mk", "half", [], ScoringConfig(mkqa_mode=mode, resamples=50))
    # Per question: 412 km 1, failed 0, 1871 1, "Yes." 1, failed 0, "eleven" 1 (an alias), the abstention on the
    # unanswerable question 1, failed on the long_answer one 0.  EM = F1 = 5/8 = 62.5; answerable 4/6 = 66.67
    # (answered 4, failed 2); unanswerable 1/2 = 50 (answered 1, failed 1).
    # Official: answers get no-answer probability 0, the abstention 1 with no text, the failed ones are outside
    # the sweep.  Start: 1 (the abstaining unanswerable question); admitting the four answers (all exact): 5,
    # the best, τ = 0; admitting the abstention (no text) changes nothing.  best_f1 = 5 / 8 = 62.5, and at τ = 0
    # the abstention abstains (1 > 0): the same numbers as the improved mode.
    assert _board(scores) == {"em": (62.5, 8, 5, 3), "f1": (62.5, 8, 5, 3),
                              "answerable_em": (66.67, 6, 4, 2), "answerable_f1": (66.67, 6, 4, 2),
                              "unanswerable_em": (50.0, 2, 1, 1), "unanswerable_f1": (50.0, 2, 1, 1)}


def test_official_mode_credits_an_abstention_on_unanswerable_questions(warehouse: Warehouse) -> None:
    _store(warehouse, "abstain", ABSTAIN)
    scores, _ = mkqa_scorer(warehouse, "mk", "abstain", [], ScoringConfig(mkqa_mode="official"))
    # Every answer abstains: no-answer probability 1, no text.  Nothing beats the start (2 unanswerable of 8),
    # τ stays 0 and everyone abstains there: EM = F1 = 25, answerable 0, unanswerable 100.  (Read as the text
    # "I don't know." with probability 0, as before, EM was 0: the text matches no gold string.)
    board = _board(scores)
    assert (board["em"][0], board["f1"][0], board["answerable_f1"][0], board["unanswerable_em"][0]) == (
        25.0, 25.0, 0.0, 100.0)
