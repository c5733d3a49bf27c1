"""CLIRMatrix ranking metrics and bootstrap intervals (tasks.metrics)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from tasks.metrics.bootstrap import bootstrap_ci
from tasks.metrics.ranking import (
    METRICS,
    evaluate_run,
    id_type_mismatch,
    mrr_of_label,
    ndcg_at_k,
    ndcg_without_label,
    queries_without_relevant_hits,
    recall_at_k,
)

LOG2_3 = math.log2(3)  # 1.5849625...


def test_ndcg_with_exponential_gain_by_hand() -> None:
    # Ranking labels 6, 0, 5; judgements {6, 5, 0}.
    # DCG@3  = (2^6-1)/log2(2) + 0/log2(3) + (2^5-1)/log2(4) = 63 + 0 + 15.5 = 78.5
    # IDCG@3 = 63/1 + 31/log2(3) + 0 = 63 + 19.5588... = 82.5588...
    # NDCG   = 78.5 / 82.5588... = 0.95083...
    value = ndcg_at_k([6, 0, 5], [6, 5, 0], 3)
    assert value == pytest.approx(78.5 / (63 + 31 / LOG2_3))
    assert value == pytest.approx(0.95083, abs=1e-5)


def test_exponential_gain_differs_from_linear_gain() -> None:
    # trec_eval-style linear gain would give (6 + 5/2) / (6 + 5/log2(3)) = 8.5 / 9.1546... = 0.92849...
    linear = (6 + 5 / 2) / (6 + 5 / LOG2_3)
    assert linear == pytest.approx(0.92849, abs=1e-5)
    assert ndcg_at_k([6, 0, 5], [6, 5, 0], 3) != pytest.approx(linear, abs=1e-3)


def test_ideal_ranking_counts_judged_documents_the_run_missed() -> None:
    # Run found only the label-5 document; IDCG@10 = 63 + 31/log2(3) = 82.5588 -> 31 / 82.5588 = 0.37549
    assert ndcg_at_k([5], [6, 5], 10) == pytest.approx(31 / (63 + 31 / LOG2_3))
    assert ndcg_at_k([5], [6, 5], 10) == pytest.approx(0.37549, abs=1e-5)


def test_cutoff_ignores_documents_below_k() -> None:
    # @1: label 0 at rank 1 -> 0; @2: 63/log2(3) over IDCG 63 -> 1/log2(3) = 0.63093
    assert ndcg_at_k([0, 6], [6], 1) == 0.0
    assert ndcg_at_k([0, 6], [6], 2) == pytest.approx(1 / LOG2_3)


def test_perfect_ranking_scores_one() -> None:
    assert ndcg_at_k([6, 5, 3, 1], [1, 3, 5, 6], 10) == pytest.approx(1.0)


def test_query_without_relevant_judgements_scores_zero() -> None:
    assert ndcg_at_k([0, 0], [0, 0, 0], 10) == 0.0


def test_ndcg_without_own_article_removes_it_from_both_sides() -> None:
    # Without the 6: ranking [0, 5], judgements [5, 0]:
    # DCG = 31/log2(3) = 19.5588, IDCG = 31 -> 1/log2(3) = 0.63093
    assert ndcg_without_label([6, 0, 5], [6, 5, 0], 10) == pytest.approx(1 / LOG2_3)


def test_mrr_of_the_own_article() -> None:
    assert mrr_of_label([0, 2, 6, 6]) == pytest.approx(1 / 3)
    assert mrr_of_label([6]) == 1.0
    assert mrr_of_label([5, 4]) == 0.0
    assert mrr_of_label([0, 5], label=5) == 0.5


def test_recall_at_k() -> None:
    assert recall_at_k(["a", "b", "c", "d"], ["b", "d", "e"], 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "b", "c", "d"], ["b", "d", "e"], 4) == pytest.approx(2 / 3)
    assert recall_at_k(["a"], [], 10) == 0.0


QRELS = {"q1": {"d1": 6, "d2": 5, "d3": 0}, "q2": {"x": 6, "y": 2}}


def test_evaluate_run_scores_each_judged_query() -> None:
    run = {"q1": ["d1", "d3", "d2"], "q3": ["z"]}
    scores = evaluate_run(run, QRELS)
    assert set(scores) == set(METRICS)
    assert all(set(per_query) == {"q1", "q2"} for per_query in scores.values())  # q3 has no judgements
    assert scores["ndcg@1"]["q1"] == 1.0  # 63 / 63
    assert scores["ndcg@5"]["q1"] == pytest.approx(78.5 / (63 + 31 / LOG2_3))
    assert scores["ndcg@10"]["q1"] == pytest.approx(0.95083, abs=1e-5)
    assert scores["ndcg@10_no6"]["q1"] == pytest.approx(1 / LOG2_3)
    assert scores["mrr_self"]["q1"] == 1.0
    assert scores["recall@100"]["q1"] == 1.0  # d1, d2 are the relevant ones; d3 (label 0) is not
    # q2 is missing from the run: zero on every metric.
    assert all(per_query["q2"] == 0.0 for per_query in scores.values())


def test_evaluate_run_counts_unjudged_documents_as_zero() -> None:
    scores = evaluate_run({"q2": ["new", "x"]}, {"q2": QRELS["q2"]})
    # DCG = 63/log2(3); IDCG = 63 + 3/log2(3)
    assert scores["ndcg@10"]["q2"] == pytest.approx((63 / LOG2_3) / (63 + 3 / LOG2_3))
    assert scores["mrr_self"]["q2"] == 0.5
    assert scores["recall@100"]["q2"] == 0.5


def test_evaluate_run_rejects_a_document_ranked_twice() -> None:
    with pytest.raises(ValueError, match="q1"):
        evaluate_run({"q1": ["d1", "d1"]}, QRELS)


def test_a_run_with_ids_of_another_type_gets_the_id_type_hint(caplog: pytest.LogCaptureFixture) -> None:
    # Qrels from the warehouse (int page ids), the run read back from an export (the same ids as strings).
    with caplog.at_level(logging.WARNING, logger="tasks.metrics.ranking"):
        scores = evaluate_run({1: ["640", "1830"]}, {1: {640: 6, 1830: 5}})
    assert scores["ndcg@10"][1] == 0.0
    (record,) = caplog.records
    assert "doc ids of the run: digit string; of the qrels: integer" in record.getMessage()
    assert "same doc id type" in record.getMessage()


def test_a_run_of_the_right_id_type_that_finds_nothing_judged_gets_no_hint(caplog: pytest.LogCaptureFixture) -> None:
    # A ja title against de articles: BM25 returns de page ids, none of them judged. A result, not a type problem.
    with caplog.at_level(logging.WARNING, logger="tasks.metrics.ranking"):
        scores = evaluate_run({1: [77, 78]}, {1: {640: 6, 1830: 5}})
    assert scores["ndcg@10"][1] == 0.0
    assert caplog.records == []


def test_id_type_mismatch_compares_the_forms_of_the_ids() -> None:
    assert id_type_mismatch({"q": ["doc-7"]}, {"q": {"640": 6}}) is not None  # no digit string can equal "doc-7"
    assert id_type_mismatch({"q": [np.int64(640)]}, {"q": {640: 6}}) is None  # numpy and Python ints compare equal
    assert id_type_mismatch({"q": ["640", "doc-7"]}, {"q": {"641": 6}}) is None  # one form in common
    assert id_type_mismatch({"q": []}, {"q": {640: 6}}) is None  # retrieving nothing is not a type problem


def test_queries_without_relevant_hits_ignore_label_zero_and_count_queries_missing_from_the_run() -> None:
    qrels = {"q1": {"d1": 6, "pad": 0}, "q2": {"x": 6}, "q3": {"y": 2}}
    run = {"q1": ["pad", "z"], "q2": ["w", "x"]}
    # q1 retrieved only its label-0 padding document; q2 found x at rank 2; q3 is not in the run.
    assert queries_without_relevant_hits(run, qrels) == ["q1", "q3"]


def test_bootstrap_interval_of_a_mean_matches_the_normal_approximation() -> None:
    # 400 values, half 0 and half 1: mean 0.5, standard error 0.5 / sqrt(400) = 0.025,
    # so a 95% interval is about 0.5 ± 1.96 * 0.025 = [0.451, 0.549].
    values = [0.0, 1.0] * 200
    mean, low, high = bootstrap_ci(values, n_resamples=2000, seed=1)
    assert mean == 0.5
    assert low == pytest.approx(0.451, abs=0.01)
    assert high == pytest.approx(0.549, abs=0.01)


def test_bootstrap_is_reproducible_and_widens_with_confidence() -> None:
    values = [0.2, 0.9, 0.4, 0.7, 0.1, 0.95, 0.5, 0.3]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    _, low90, high90 = bootstrap_ci(values, confidence=0.90, seed=3)
    _, low99, high99 = bootstrap_ci(values, confidence=0.99, seed=3)
    assert low99 < low90 < high90 < high99


def test_bootstrap_of_constant_values_is_a_point() -> None:
    assert bootstrap_ci([0.7, 0.7, 0.7]) == (pytest.approx(0.7),) * 3
    assert bootstrap_ci([0.25]) == (0.25, None, None)  # one query: no interval, not [x, x]


def test_bootstrap_needs_values() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_ci([])


def test_ndcg_without_own_article_is_undefined_when_nothing_else_is_relevant() -> None:
    # Only the own article (6) is relevant; the label-0 padding leaves no ideal gain once the 6 is removed.
    assert ndcg_without_label([6, 0], [6, 0, 0], 10) is None
    assert ndcg_without_label([], [6], 10) is None
    # one other relevant document, not retrieved: defined, and 0
    assert ndcg_without_label([6], [6, 1], 10) == 0.0


def test_evaluate_run_leaves_undefined_queries_out_of_ndcg_without_own_article_only() -> None:
    qrels = {"q1": {"d1": 6, "d2": 5}, "q2": {"x": 6, "pad": 0}}
    scores = evaluate_run({"q1": ["d1", "d2"], "q2": ["x"]}, qrels)
    assert scores["ndcg@10_no6"] == {"q1": 1.0}  # q2 has nothing relevant besides its own article
    assert all(set(scores[metric]) == {"q1", "q2"} for metric in METRICS if metric != "ndcg@10_no6")
    assert scores["ndcg@10"]["q2"] == 1.0
