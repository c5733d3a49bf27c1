"""ECLEKTIC's and XRAG's metrics, the judge panel and the question-clustered bootstrap, against numbers worked out
by hand.  Every share is a percentage (0–100), the one scale of every recipe."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tasks.errors import ConfigError
from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.eclektic import Judged, eclektic_scores, score_eclektic_file
from tasks.metrics.panel import panel_decision
from tasks.metrics.xrag import PanelRow, xrag_scores

# Three questions, each judged in its source language and two targets:
#   q1 (source de ✓): en ✓, fr ✗      → 1 success of 2 pairs
#   q2 (source en ✗): de ✓, fr ✗      → 0 successes (the source failed) of 2 pairs
#   q3 (source fr ✓): en ✓, de ✓      → 2 successes of 2 pairs
ROWS = [Judged("q1", "de", "de", True), Judged("q1", "de", "en", True), Judged("q1", "de", "fr", False),
        Judged("q2", "en", "en", False), Judged("q2", "en", "de", True), Judged("q2", "en", "fr", False),
        Judged("q3", "fr", "fr", True), Judged("q3", "fr", "en", True), Judged("q3", "fr", "de", True)]


def test_overall_success_transfer_and_source_accuracy_are_pooled_over_pairs() -> None:
    result = eclektic_scores(ROWS, resamples=200)
    assert result["n_pairs"] == 6
    assert result["overall_success"] == pytest.approx(100 * 3 / 6)  # 1 + 0 + 2 successes over 6 pairs
    assert result["transfer"] == pytest.approx(100 * 3 / 4)  # over the 4 pairs of q1 and q3, whose source was accepted
    assert result["n_transfer"] == 4  # transfer's own denominator, not the 6 pairs
    assert result["source_accuracy"] == pytest.approx(100 * 4 / 6)  # q1's and q3's 2 pairs each, of 6
    assert result["overall_success"] / result["transfer"] == pytest.approx(4 / 6)  # the spec's identity
    # de → fr: q1 only, failed; en → de: q2's de is right but its source is not, so no success and no transfer base
    assert result["matrix"]["de"]["fr"] == {"overall_success": 0.0, "transfer": 0.0, "n": 1, "n_transfer": 1}
    assert result["matrix"]["en"]["de"] == {"overall_success": 0.0, "transfer": None, "n": 1, "n_transfer": 0}
    assert result["matrix"]["fr"]["fr"] == {"overall_success": 100.0, "transfer": 100.0, "n": 1,  # the diagonal
                                            "n_transfer": 1}
    low, high = result["ci"]["overall_success"]
    assert 0.0 <= low <= 50.0 <= high <= 100.0


def test_source_accuracy_is_pooled_over_pairs_when_questions_have_different_numbers_of_targets() -> None:
    # q1 (source de ✓) is asked in three targets, q2 (source en ✗) in one: 3 of the 4 pairs have an accepted
    # source answer (a per-question average would say 1 of 2).  Successes: q1's en and fr → 2 of 4 pairs.
    rows = [Judged("q1", "de", "de", True), Judged("q1", "de", "en", True), Judged("q1", "de", "fr", True),
            Judged("q1", "de", "ja", False), Judged("q2", "en", "en", False), Judged("q2", "en", "de", True)]
    result = eclektic_scores(rows, resamples=50)
    assert (result["n_pairs"], result["source_accuracy"]) == (4, pytest.approx(100 * 3 / 4))
    assert (result["overall_success"], result["transfer"]) == (pytest.approx(100 * 2 / 4), pytest.approx(100 * 2 / 3))
    assert 100 * result["overall_success"] / result["transfer"] == pytest.approx(result["source_accuracy"])


def test_transfer_is_undefined_when_no_source_answer_was_accepted() -> None:
    rows = [Judged("q", "en", "en", False), Judged("q", "en", "de", True)]
    result = eclektic_scores(rows, resamples=50)
    assert (result["overall_success"], result["transfer"], result["ci"]["transfer"]) == (0.0, None, [None, None])


@pytest.mark.parametrize("rows, message", [
    ([Judged("q", "en", "de", True)], "no judgement in its source language 'en'"),
    ([Judged("q", "en", "en", True), Judged("q", "en", "en", False)], "two judgements in 'en'"),
    ([Judged("q", "en", "en", True), Judged("q", "de", "de", True)], "source language 'de' here, 'en' before"),
])
def test_inconsistent_judgements_are_refused_naming_the_question(rows: list[Judged], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        eclektic_scores(rows)


def test_a_judgements_file_is_scored_and_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "judgements.jsonl"
    path.write_text("".join(json.dumps({"question_id": r.question_id, "source_lang": r.source_lang, "lang": r.lang,
                                        "correct": r.correct}) + "\n" for r in ROWS))
    result = score_eclektic_file(path, resamples=100)
    assert set(result) == {"overall_success", "transfer", "source_accuracy", "n_pairs", "n_transfer", "matrix",
                           "matrix_means", "ci"}
    assert result["overall_success"] == pytest.approx(50.0)
    path.write_text(path.read_text() + '{"question_id": "q4", "source_lang": "en", "lang": "en", "correct": "yes"}\n')
    with pytest.raises(ConfigError, match=r"judgements.jsonl line 10: correct is 'yes'"):
        score_eclektic_file(path)


def test_clustered_intervals_are_wider_when_a_question_s_languages_move_together() -> None:
    # 40 questions, 4 languages each; a question is right in all its languages or in none (half of them).
    per_question = np.array([4.0, 0.0] * 20)
    clustered = clustered_ratio_ci(per_question, np.full(40, 4.0), n_resamples=2000, seed=1)
    # the same 160 answers resampled as if independent: the interval shrinks by about sqrt(4) = 2
    rows = np.repeat([1.0, 0.0] * 20, 4)
    independent = clustered_ratio_ci(rows, np.ones(160), n_resamples=2000, seed=1)
    assert clustered[0] == independent[0] == 0.5
    width = clustered[2] - clustered[1]
    assert width / (independent[2] - independent[1]) == pytest.approx(2.0, rel=0.25)


def test_with_independent_questions_the_interval_matches_the_papers_normal_approximation() -> None:
    # p = 0.3 over n = 400 questions of one pair each: 1.96 * sqrt(0.3 * 0.7 / 400) = 0.0449
    values = np.array([1.0] * 120 + [0.0] * 280)
    ratio, low, high = clustered_ratio_ci(values, np.ones(400), n_resamples=4000, seed=0)
    assert ratio == pytest.approx(0.3)
    half = 1.96 * math.sqrt(0.3 * 0.7 / 400)
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)  # the bootstrap's own noise at 4000 resamples
    assert clustered_ratio_ci(values, np.ones(400), n_resamples=500, seed=7) == \
        clustered_ratio_ci(values, np.ones(400), n_resamples=500, seed=7)


@pytest.mark.parametrize("verdicts, expected", [
    (("yes", "yes", "no"), True), (("yes", "no"), False), ((), False), (("no", "no", "yes"), False),
    # a missing verdict is not a yes: two of three must say yes even when the third failed
    (("yes", "yes", None), True), (("yes", None, None), None), (("yes", "no", None), None), ((None, None), None),
    # ... and when the verdicts given already make a majority of "no", the missing one cannot change it
    # (of two judges one said no: a yes from the other would make 1 of 2, no majority)
    (("no", "no", None), False), (("no", None), False), (("no",), False), ((None,), None),
])
def test_the_panel_needs_a_strict_majority_of_all_its_judges(verdicts: tuple, expected: bool | None) -> None:
    assert panel_decision(verdicts) is expected


def test_xrag_accuracy_needs_the_panel_and_the_question_s_language() -> None:
    rows = [  # q1: right and in German; q2: right but in English; q3: the panel says wrong; q4: no detector
        PanelRow("q1", "multilingual_retrieval", "de", "comparison", ("yes", "yes", "no"), True),
        PanelRow("q2", "multilingual_retrieval", "de", "comparison", ("yes", "yes", "yes"), False),
        PanelRow("q3", "multilingual_retrieval", "de", "set", ("no", "no", "yes"), True),
        PanelRow("q4", "multilingual_retrieval", "de", "set", ("yes", "yes", "yes"), None),
    ]
    scores = {(s.lang, s.subset, s.metric): s for s in xrag_scores(rows, resamples=100)}
    assert scores[("de", "all", "accuracy")].value == pytest.approx(100 * 2 / 4)  # q1 and q4
    # shares of the 4 answered: q2 wrong, q4 unchecked
    assert (scores[("de", "all", "wrong_language")].value, scores[("de", "all", "wrong_language")].n) == (25.0, 4)
    assert scores[("de", "all", "unchecked")].value == pytest.approx(25.0)
    assert scores[("de", "comparison", "accuracy")].value == pytest.approx(50.0)
    assert scores[("de", "set", "accuracy")].value == pytest.approx(50.0)
    assert scores[("all", "all", "accuracy")].n == 4


def test_the_matrix_is_averaged_with_and_without_its_diagonal() -> None:
    # ROWS' overall success cells: de→de 100, de→en 100, de→fr 0; en→en 0, en→de 0, en→fr 0; fr→fr 100, fr→de 100,
    # fr→en 100.  With the diagonal: 500 / 9 cells; without: (100 + 0 + 0 + 0 + 100 + 100) / 6 = 50.
    # Transfer cells are defined only where the source answer was accepted (q1 de, q3 fr): de→de 100, de→en 100,
    # de→fr 0, fr→fr 100, fr→de 100, fr→en 100: 500 / 6 with the diagonal, (100 + 0 + 100 + 100) / 4 = 75 without.
    means = eclektic_scores(ROWS, resamples=50)["matrix_means"]
    assert means["overall_success"]["with_diagonal"] == {"value": pytest.approx(500 / 9), "n": 9}
    assert means["overall_success"]["without_diagonal"] == {"value": pytest.approx(50.0), "n": 6}
    assert means["transfer"]["with_diagonal"] == {"value": pytest.approx(500 / 6), "n": 6}
    assert means["transfer"]["without_diagonal"] == {"value": pytest.approx(75.0), "n": 4}


@pytest.mark.parametrize("numerators, denominators", [([3], [4]), ([1, 0], [2, 0])])
def test_one_cluster_gives_a_value_but_no_interval(numerators: list[float], denominators: list[float]) -> None:
    # one question (or one with weight beside one with an empty denominator): every resample repeats it
    ratio, low, high = clustered_ratio_ci(numerators, denominators, n_resamples=100)
    assert (ratio, low, high) == (pytest.approx(sum(numerators) / sum(denominators)), None, None)
    assert None not in clustered_ratio_ci([1, 0], [1, 1], n_resamples=100)  # two clusters: an interval


def _xrag_panel_rows() -> list[PanelRow]:
    return [  # one setting, German, a panel of three judges
        PanelRow("q1", "s", "de", None, ("yes", "yes", "no"), True),    # correct
        PanelRow("q2", "s", "de", None, ("yes", None, None), True),     # 1 yes of 3: undecided, two judges failed
        PanelRow("q3", "s", "de", None, (None, None, None), None, answered=False),  # the response failed
        PanelRow("q4", "s", "de", None, ("yes", "yes", None), None),    # 2 of 3 say yes: correct; language unchecked
        PanelRow("q5", "s", "de", None, ("no", "no", None), True),      # 2 of 3 say no: incorrect
    ]


def test_a_failed_response_and_an_incomplete_panel_are_incorrect_and_counted() -> None:
    scores = {s.metric: s for s in xrag_scores(_xrag_panel_rows(), resamples=100) if s.lang == "de"}
    accuracy = scores["accuracy"]
    # q1 and q4 correct, of all 5 responses (the failed q3 and the undecided q2 are incorrect, not left out)
    assert (accuracy.value, accuracy.n) == (pytest.approx(100 * 2 / 5), 5)
    # answered: q1, q2, q4, q5; failed: q3; judge_failed (incomplete panels): q2, q4, q5
    assert (accuracy.answered, accuracy.failed, accuracy.judge_failed) == (4, 1, 3)
    # shares of the 4 answered (q3 failed: no answer to place): q4 unchecked, none wrong, none abstained
    assert (scores["unchecked"].value, scores["unchecked"].n) == (25.0, 4)
    assert (scores["wrong_language"].value, scores["wrong_language"].n) == (0.0, 4)
    assert (scores["abstained"].value, scores["abstained"].n) == (0.0, 4)


def test_the_language_shares_are_of_every_answered_response_and_an_abstention_is_never_wrong_language() -> None:
    rows = [  # five answered German responses: two in another script, one abstention, two in German
        PanelRow("q1", "s", "de", None, ("yes",), False),
        PanelRow("q2", "s", "de", None, ("yes",), False),
        PanelRow("q3", "s", "de", None, ("no",), None, abstained=True),
        PanelRow("q4", "s", "de", None, ("yes",), True),
        PanelRow("q5", "s", "de", None, ("no",), True),
        PanelRow("q6", "s", "de", None, (None,), None, answered=False),  # failed: in no share's denominator
    ]
    scores = {s.metric: s for s in xrag_scores(rows, resamples=100) if s.lang == "de"}
    # 2 of the 5 answered are wrong-language (40%, not 2 of 2 checked = 100%); the abstention is 1 of 5 apart
    assert (scores["wrong_language"].value, scores["wrong_language"].n) == (pytest.approx(40.0), 5)
    assert (scores["abstained"].value, scores["unchecked"].value) == (pytest.approx(20.0), 0.0)
    assert scores["accuracy"].value == pytest.approx(100 / 6)  # q4 alone, of all 6


def test_judge_failures_exclude_leaves_out_only_answers_a_missing_verdict_would_decide() -> None:
    scores = {s.metric: s for s in xrag_scores(_xrag_panel_rows(), resamples=100, judge_failures="exclude")
              if s.lang == "de"}
    # q2 is left out (its two missing verdicts decide it); q4 and q5 are decided anyway; the failed q3 stays: 2 of 4
    assert (scores["accuracy"].value, scores["accuracy"].n) == (pytest.approx(100 * 2 / 4), 4)
    assert scores["accuracy"].judge_failed == 3  # counted all the same


def test_the_pooled_xrag_languages_leave_out_the_english_baseline() -> None:
    yes, no = ("yes",), ("no",)
    rows = [PanelRow("q1", "s", "en", None, yes, True), PanelRow("q1", "s", "de", None, no, True),
            PanelRow("q2", "s", "en", None, yes, True), PanelRow("q2", "s", "zh", None, yes, True)]
    scores = {(s.lang, s.metric): s for s in xrag_scores(rows, resamples=100)}
    assert (scores[("all", "accuracy")].value, scores[("all", "accuracy")].n) == (pytest.approx(50.0), 2)  # de ✗, zh ✓
    assert (scores[("en", "accuracy")].value, scores[("en", "accuracy")].n) == (pytest.approx(100.0), 2)  # the baseline
    assert (scores[("de", "accuracy")].ci_low, scores[("de", "accuracy")].ci_high) == (None, None)  # one question
