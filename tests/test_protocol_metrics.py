"""ECLEKTIC's and XRAG's metrics and the question-clustered bootstrap, against numbers worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tasks.errors import ConfigError
from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.eclektic import Judged, eclektic_scores, score_eclektic_file
from tasks.metrics.xrag import PanelRow, majority, xrag_scores

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
    assert result["overall_success"] == pytest.approx(3 / 6)  # 1 + 0 + 2 successes over 6 pairs
    assert result["transfer"] == pytest.approx(3 / 4)  # over the 4 pairs of q1 and q3, whose source was accepted
    assert result["source_accuracy"] == pytest.approx(2 / 3)
    assert result["overall_success"] / result["transfer"] == pytest.approx(4 / 6)  # the spec's identity
    # de → fr: q1 only, failed; en → de: q2's de is right but its source is not, so no success and no transfer base
    assert result["matrix"]["de"]["fr"] == {"overall_success": 0.0, "transfer": 0.0, "n": 1}
    assert result["matrix"]["en"]["de"] == {"overall_success": 0.0, "transfer": None, "n": 1}
    assert result["matrix"]["fr"]["fr"] == {"overall_success": 1.0, "transfer": 1.0, "n": 1}  # the diagonal
    low, high = result["ci"]["overall_success"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0


def test_source_accuracy_is_pooled_over_pairs_when_questions_have_different_numbers_of_targets() -> None:
    # q1 (source de ✓) is asked in three targets, q2 (source en ✗) in one: 3 of the 4 pairs have an accepted
    # source answer (a per-question average would say 1 of 2).  Successes: q1's en and fr → 2 of 4 pairs.
    rows = [Judged("q1", "de", "de", True), Judged("q1", "de", "en", True), Judged("q1", "de", "fr", True),
            Judged("q1", "de", "ja", False), Judged("q2", "en", "en", False), Judged("q2", "en", "de", True)]
    result = eclektic_scores(rows, resamples=50)
    assert (result["n_pairs"], result["source_accuracy"]) == (4, pytest.approx(3 / 4))
    assert (result["overall_success"], result["transfer"]) == (pytest.approx(2 / 4), pytest.approx(2 / 3))
    assert result["overall_success"] / result["transfer"] == pytest.approx(result["source_accuracy"])


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
    assert set(result) == {"overall_success", "transfer", "source_accuracy", "n_pairs", "matrix", "ci"}
    assert result["overall_success"] == pytest.approx(0.5)
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
    (("yes", "yes", "no"), True), (("yes", "no"), False), (("yes", None, None), True), ((None, None), False),
    ((), False), (("no", "no", "yes"), False),
])
def test_the_panel_needs_a_strict_majority(verdicts: tuple, expected: bool) -> None:
    assert majority(verdicts) is expected


def test_xrag_accuracy_needs_the_panel_and_the_question_s_language() -> None:
    rows = [  # q1: right and in German; q2: right but in English; q3: the panel says wrong; q4: no detector
        PanelRow("q1", "multilingual_retrieval", "de", "comparison", ("yes", "yes", "no"), True),
        PanelRow("q2", "multilingual_retrieval", "de", "comparison", ("yes", "yes", "yes"), False),
        PanelRow("q3", "multilingual_retrieval", "de", "set", ("no", "no", "yes"), True),
        PanelRow("q4", "multilingual_retrieval", "de", "set", ("yes", "yes", "yes"), None),
    ]
    scores = {(s.lang, s.subset, s.metric): s for s in xrag_scores(rows, resamples=100)}
    assert scores[("de", "all", "accuracy")].value == pytest.approx(100 * 2 / 4)  # q1 and q4
    assert scores[("de", "all", "wrong_language")].value == pytest.approx(100 * 1 / 3)  # of the 3 checked
    assert scores[("de", "comparison", "accuracy")].value == pytest.approx(50.0)
    assert scores[("de", "set", "accuracy")].value == pytest.approx(50.0)
    assert scores[("all", "all", "accuracy")].n == 4
