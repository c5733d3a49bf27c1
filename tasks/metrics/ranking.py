"""Ranking metrics of the CLIR recipe, computed directly with CLIRMatrix's gain.

CLIRMatrix scores NDCG with exponential gain 2^label - 1, under which a label-6
document is worth twice a label-5 one; trec_eval, pytrec_eval and scikit-learn
default to linear gain (the label itself) and would report different numbers,
so the metrics are computed here rather than borrowed.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Hashable, Mapping, Sequence

from tasks.pairing.config import SELF_LABEL

logger = logging.getLogger(__name__)

#: Metric names of ``evaluate_run``, in report order.  Every judged query has a value in each, except
#: ``ndcg@10_no6`` (a query with no relevant document besides its own article is left out; see
#: ``ndcg_without_label``).
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
) -> float | None:
    """NDCG@k with every ``label`` document removed from both the ranking and the judgements.

    Removing the query's own article (label 6) measures how well a system ranks
    the related articles, not just the one whose title matches the query;
    documents below it move up one rank. A query with no relevant document
    besides its own article has nothing left to rank: the value is undefined
    (None), and such a query is left out of this metric's mean — scoring it 0
    would blame every system for a query no system can do anything on.
    """
    remaining = [value for value in all_labels if value != label]
    if not any(value > 0 for value in remaining):
        return None
    return ndcg_at_k([value for value in ranked_labels if value != label], remaining, k)


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


def id_form(doc_id: Hashable) -> str:
    """The form of a document id: ``integer``, ``digit string``, ``string`` or the type's name.

    Integers of any type (int, numpy integers) are one form because they
    compare equal; a string of digits is told from other strings because an
    export's ``"640"`` never equals a warehouse's ``640`` nor an id like ``"doc-7"``.
    """
    if isinstance(doc_id, numbers.Integral) and not isinstance(doc_id, bool):
        return "integer"
    if isinstance(doc_id, str):
        return "digit string" if doc_id.isdigit() else "string"
    return type(doc_id).__name__


def id_type_mismatch(
    run: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]]
) -> str | None:
    """Why no document of the run can ever match a judged one, or None when they can.

    Documents are matched by equality, so a run of ``str`` ids scored against
    ``int`` qrels (a run read back from an export, qrels from the warehouse)
    scores 0 everywhere without any error. The forms (``id_form``) of the two
    sides are compared: only when they share none is it a mismatch. A run whose
    ids have the right form but find nothing judged is a legitimate result, not
    a type problem (``queries_without_relevant_hits`` counts those).
    """
    run_forms = {id_form(doc_id) for ranking in run.values() for doc_id in ranking}
    judged_forms = {id_form(doc_id) for judged in qrels.values() for doc_id in judged}
    if not run_forms or not judged_forms or run_forms & judged_forms:
        return None
    return (f"doc ids of the run: {', '.join(sorted(run_forms))}; of the qrels: {', '.join(sorted(judged_forms))};"
            " no retrieved document can match a judged one")


def queries_without_relevant_hits(
    run: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]]
) -> list[Hashable]:
    """The judged queries (in ``qrels`` order) none of whose retrieved documents has a positive label.

    Such a query scores 0 on every metric. Relevant rather than merely judged:
    in a CLIRMatrix collection every judged document except the random label-0
    padding is relevant, and retrieving a padding document by chance says
    nothing. A query the run does not rank at all counts too. For a lexical
    ranker this is legitimate where query and documents share no terms
    (ja titles against de articles), so it is reported, not treated as an error.
    """
    return [query_id for query_id, judged in qrels.items()
            if not any(judged.get(doc_id, 0) > 0 for doc_id in run.get(query_id, ()))]


def evaluate_run(
    run: Mapping[Hashable, Sequence[Hashable]], qrels: Mapping[Hashable, Mapping[Hashable, int]]
) -> dict[str, dict[Hashable, float]]:
    """Per metric (``METRICS``), per judged query, the score of a ranked run.

    Every query of ``qrels`` is scored; one missing from the run scores 0 on
    every metric, so a system cannot gain by skipping hard queries. The one
    exception is ``ndcg@10_no6``, undefined for a query whose only relevant
    document is its own article: such a query has no entry there (the caller
    counts them as ``len(qrels) - len(scores["ndcg@10_no6"])``). Queries of
    the run that have no judgements are ignored. Documents are matched by
    equality, so run and qrels must use the same id type; when the forms of
    their ids share nothing (``id_type_mismatch``) a warning says so, because
    the scores are then all 0 for a reason that is not the ranker's.
    """
    scores: dict[str, dict[Hashable, float]] = {name: {} for name in METRICS}
    for query_id, judged in qrels.items():
        ranking = list(run.get(query_id, ()))
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"run, query {query_id}: a document is ranked twice")
        ranked_labels = [judged.get(doc_id, 0) for doc_id in ranking]
        all_labels = list(judged.values())
        scores["ndcg@1"][query_id] = ndcg_at_k(ranked_labels, all_labels, 1)
        scores["ndcg@5"][query_id] = ndcg_at_k(ranked_labels, all_labels, 5)
        scores["ndcg@10"][query_id] = ndcg_at_k(ranked_labels, all_labels, 10)
        without_self = ndcg_without_label(ranked_labels, all_labels, 10)
        if without_self is not None:
            scores["ndcg@10_no6"][query_id] = without_self
        scores["mrr_self"][query_id] = mrr_of_label(ranked_labels)
        scores["recall@100"][query_id] = recall_at_k(ranking, [d for d, label in judged.items() if label > 0], 100)
    mismatch = id_type_mismatch(run, qrels)
    if mismatch is not None:
        logger.warning("%s: do run and qrels use the same doc id type?", mismatch)
    return scores
