"""Ranking metrics of the CLIR recipe, computed directly with CLIRMatrix's gain.

CLIRMatrix scores NDCG with exponential gain 2^label - 1, under which a label-6
document is worth twice a label-5 one; trec_eval, pytrec_eval and scikit-learn
default to linear gain (the label itself) and would report different numbers,
so the metrics are computed here rather than borrowed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Mapping, Sequence

from tasks.pairing.config import SELF_LABEL

logger = logging.getLogger(__name__)

#: Metric names of ``evaluate_run``, in report order.
METRICS: tuple[str, ...] = ("ndcg@1", "ndcg@5", "ndcg@10", "ndcg@10_no6", "mrr_self", "recall@100")


def _dcg(labels: Sequence[int], k: int) -> float:
    return sum((2**label - 1) / math.log2(rank + 1) for rank, label in enumerate(labels[:k], start=1))


def ndcg_at_k(ranked_labels: Sequence[int], all_labels: Sequence[int], k: int) -> float:
    """NDCG@k with gain 2^label - 1 and discount log2(rank + 1).

    ``ranked_labels`` are the labels of the retrieved documents in rank order
    (0 for unjudged ones); ``all_labels`` are all judged labels of the query, so
    the ideal ranking counts relevant documents the run missed. A query whose
    judgements hold no positive label has no ideal gain to compare with and
    scores 0.0 (the run cannot do anything right or wrong there).
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ideal = _dcg(sorted(all_labels, reverse=True), k)
    if ideal == 0:
        return 0.0
    return _dcg(ranked_labels, k) / ideal


def ndcg_without_label(
    ranked_labels: Sequence[int], all_labels: Sequence[int], k: int, label: int = SELF_LABEL
) -> float:
    """NDCG@k with every ``label`` document removed from both the ranking and the judgements.

    Removing the query's own article (label 6) measures how well a system ranks
    the related articles, not just the one whose title matches the query;
    documents below it move up one rank.
    """
    return ndcg_at_k(
        [value for value in ranked_labels if value != label], [value for value in all_labels if value != label], k
    )


def mrr_of_label(ranked_labels: Sequence[int], label: int = SELF_LABEL) -> float:
    """1 / rank of the first document with ``label`` (by default the query's own article), 0.0 if none."""
    for rank, value in enumerate(ranked_labels, start=1):
        if value == label:
            return 1.0 / rank
    return 0.0


def recall_at_k(ranked_doc_ids: Sequence[Hashable], relevant_doc_ids: Sequence[Hashable], k: int) -> float:
    """Share of the relevant documents (label > 0) found in the top ``k``.

    0.0 when the query has no relevant document, matching ``ndcg_at_k``: such a
    query carries no signal, and every CLIRMatrix query has at least its label 6.
    """
    relevant = set(relevant_doc_ids)
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked_doc_ids[:k])) / len(relevant)


def evaluate_run(
    run: Mapping[str, Sequence[Hashable]], qrels: Mapping[str, Mapping[Hashable, int]]
) -> dict[str, dict[str, float]]:
    """Per metric (``METRICS``), per judged query, the score of a ranked run.

    Every query of ``qrels`` is scored; one missing from the run scores 0 on
    every metric, so a system cannot gain by skipping hard queries. Queries of
    the run that have no judgements are ignored. Documents are matched by
    equality, so run and qrels must use the same id type (both str or both int).
    """
    scores: dict[str, dict[str, float]] = {name: {} for name in METRICS}
    retrieved_judged = 0
    for query_id, judged in qrels.items():
        ranking = list(run.get(query_id, ()))
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"run, query {query_id}: a document is ranked twice")
        ranked_labels = [judged.get(doc_id, 0) for doc_id in ranking]
        retrieved_judged += sum(doc_id in judged for doc_id in ranking)
        all_labels = list(judged.values())
        scores["ndcg@1"][query_id] = ndcg_at_k(ranked_labels, all_labels, 1)
        scores["ndcg@5"][query_id] = ndcg_at_k(ranked_labels, all_labels, 5)
        scores["ndcg@10"][query_id] = ndcg_at_k(ranked_labels, all_labels, 10)
        scores["ndcg@10_no6"][query_id] = ndcg_without_label(ranked_labels, all_labels, 10)
        scores["mrr_self"][query_id] = mrr_of_label(ranked_labels)
        scores["recall@100"][query_id] = recall_at_k(ranking, [d for d, label in judged.items() if label > 0], 100)
    if qrels and run and retrieved_judged == 0:
        logger.warning("no retrieved document of the run is judged: do run and qrels use the same doc id type?")
    return scores
