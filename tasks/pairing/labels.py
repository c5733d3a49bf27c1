"""Graded labels for one title query's BM25 hits (CLIRMatrix step 5).

Labels are computed per query, never across queries, because BM25 scores are
not comparable between queries. The query's own article gets 6; every other
hit gets one of the Jenks classes of the query's normalised scores, the top
class labelled 5. Documents the query did not retrieve are implicitly 0.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

import jenkspy

from tasks.pairing.config import SELF_LABEL, TOP_CLASS_LABEL, ClirConfig


def normalise(scores: Sequence[float], method: str, *, query_id: str | None = None) -> list[float]:
    """One query's scores mapped to [0, 1], so label thresholds do not depend on the query's BM25 scale.

    ``minmax`` maps the lowest score to 0 and the highest to 1; when all scores
    are equal there is nothing to rank them by, and all become 1.0. ``max``
    divides by the highest score, which must then be positive.
    """
    where = f"query {query_id}: " if query_id is not None else ""
    if not scores:
        return []
    if not all(math.isfinite(score) for score in scores):
        raise ValueError(f"{where}scores must be finite, got {list(scores)}")
    high = max(scores)
    if method == "minmax":
        low = min(scores)
        if high == low:
            return [1.0] * len(scores)
        return [(score - low) / (high - low) for score in scores]
    if method == "max":
        if high <= 0:
            raise ValueError(f"{where}'max' normalisation needs a positive highest score, got {high}")
        return [score / high for score in scores]
    raise ValueError(f"{where}unknown normalisation {method!r} (minmax or max)")


def _class_ranks(values: Sequence[float], classes: int) -> list[int]:
    """0 for the values in the top class, 1 for the next class down, ... .

    With at least ``classes`` distinct values the classes are Fisher-Jenks
    natural breaks (``jenkspy.jenks_breaks``; a value equal to a break belongs
    to the class below it, as jenkspy's own ``JenksNaturalBreaks`` assigns it).
    The class of a value is found by bisecting the inner breaks, which are
    ascending: the same class as ``JenksNaturalBreaks.labels_``, without its
    recursive Python search per value and the groups it also builds, which
    together took as long as the breaks. With fewer distinct values Jenks is
    undefined, and each distinct value is its own class. Either way the classes
    that hold values are ranked from the top, so the top class always maps to
    the top label and no label is skipped.
    """
    if len(set(values)) >= classes:
        inner_breaks = jenkspy.jenks_breaks(values, classes)[1:-1]
        class_of: list[float] = [bisect_left(inner_breaks, value) for value in values]
    else:
        class_of = list(values)
    rank_of = {cls: rank for rank, cls in enumerate(sorted(set(class_of), reverse=True))}
    return [rank_of[cls] for cls in class_of]


def label_query(
    scores: Sequence[float], is_self: Sequence[bool], config: ClirConfig, *, query_id: str | None = None
) -> list[int]:
    """Labels 1-6 for one query's top-K hits (given in rank order), aligned with ``scores``.

    The own article (``is_self``) gets 6. Unless ``config.self_in_jenks``, it is
    left out of normalisation and Jenks, so its large score does not squeeze the
    other hits into the lower classes. Equal scores always get equal labels.
    ``query_id`` only names the query in error messages.
    """
    where = f"query {query_id}: " if query_id is not None else ""
    if len(scores) != len(is_self):
        raise ValueError(f"{where}{len(scores)} scores but {len(is_self)} is_self flags")
    if sum(bool(flag) for flag in is_self) > 1:
        raise ValueError(f"{where}more than one hit is flagged as the query's own article")
    ranked = [i for i, flag in enumerate(is_self) if config.self_in_jenks or not flag]
    normalised = normalise([scores[i] for i in ranked], config.normalisation, query_id=query_id)
    labels = [SELF_LABEL if flag else 0 for flag in is_self]
    for i, rank in zip(ranked, _class_ranks(normalised, config.classes), strict=True):
        if not is_self[i]:
            labels[i] = TOP_CLASS_LABEL - rank
    return labels


def label_hits(
    doc_ids: Sequence[int], scores: Sequence[float], self_doc_id: int | None, config: ClirConfig,
    *, query_id: str | None = None,
) -> list[tuple[int, int]]:
    """``(doc_id, label)`` for one query's top-K hits, plus the own article when it must be added.

    With ``config.force_self_label`` the own article (``self_doc_id``) is
    labelled 6 even when retrieval did not return it, and is then appended
    after the hits; without it, an own article outside the top K stays
    unlabelled (0).
    """
    if len(doc_ids) != len(scores):
        raise ValueError(f"query {query_id}: {len(doc_ids)} doc ids but {len(scores)} scores")
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError(f"query {query_id}: a document appears twice among the hits")
    is_self = [doc_id == self_doc_id for doc_id in doc_ids]
    labelled = list(zip(doc_ids, label_query(scores, is_self, config, query_id=query_id), strict=True))
    if self_doc_id is not None and config.force_self_label and not any(is_self):
        labelled.append((self_doc_id, SELF_LABEL))
    return labelled
