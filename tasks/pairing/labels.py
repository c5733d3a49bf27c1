"""Graded labels for title queries' BM25 hits (CLIRMatrix step 5).

Labels are computed per query, never across queries, because BM25 scores are
not comparable between queries. The query's own article gets 6; every other
hit gets one of the Jenks classes of the query's normalised scores, the top
class labelled 5. Documents the query did not retrieve are implicitly 0.

Mining labels a batch of thousands of queries of up to 100 hits each, so the
work is done on the whole batch at once: hits are flat arrays (``counts``
hits per query, query after query, each query's in rank order), the
per-query minimum, maximum, order and classes are array operations over the
batch, and the only per-query Python step left is jenkspy's Fisher-Jenks (C)
on the query's sorted values. A per-query loop over Python floats cost about
0.2 ms per query, as much as the search itself. The one-query functions
(:func:`normalise`, :func:`label_query`, :func:`label_hits`) are batches of
one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from jenkspy import jenks

from tasks.pairing.config import SELF_LABEL, TOP_CLASS_LABEL, ClirConfig

_NO_DOC = np.iinfo(np.int64).max  # pads a query's doc ids when checking them for repeats


def _where(name: str | None) -> str:
    return f"query {name}: " if name is not None else ""


def _query_of_hit(counts: np.ndarray) -> np.ndarray:
    """The query position of every hit of a batch."""
    return np.repeat(np.arange(len(counts)), counts)


def _padded(values: np.ndarray, counts: np.ndarray, fill: float | int) -> np.ndarray:
    """The batch's hits as a (query × most hits) matrix, each query's row filled up with ``fill`` after its hits."""
    width = int(counts.max()) if len(counts) else 0
    matrix = np.full((len(counts), width), fill, dtype=values.dtype)
    matrix[np.arange(width) < counts[:, None]] = values
    return matrix


def normalise_batch(scores: np.ndarray, counts: np.ndarray, method: str, names: Sequence[str | None]) -> np.ndarray:
    """Each query's scores mapped to [0, 1], so label thresholds do not depend on the query's BM25 scale.

    ``minmax`` maps a query's lowest score to 0 and its highest to 1; when
    all its scores are equal there is nothing to rank them by, and all
    become 1.0. ``max`` divides by the highest score, which must then be
    positive. The arithmetic is Python's float arithmetic, element by element.
    ``names`` name the queries in error messages.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not len(scores):
        return scores
    finite = np.isfinite(scores)
    if not finite.all():
        query = int(_query_of_hit(counts)[np.argmin(finite)])
        start = int(counts[:query].sum())
        raise ValueError(f"{_where(names[query])}scores must be finite, got {scores[start:start + counts[query]].tolist()}")
    if method not in ("minmax", "max"):
        raise ValueError(f"{_where(names[0])}unknown normalisation {method!r} (minmax or max)")
    starts = np.cumsum(counts) - counts
    present = counts > 0
    high = np.repeat(np.maximum.reduceat(scores, starts[present]), counts[present])
    if method == "max":
        if (high <= 0).any():
            query = int(_query_of_hit(counts)[np.argmax(high <= 0)])
            raise ValueError(f"{_where(names[query])}'max' normalisation needs a positive highest score, "
                             f"got {high[starts[query]]}")
        return scores / high
    low = np.repeat(np.minimum.reduceat(scores, starts[present]), counts[present])
    spread = high - low
    flat = spread == 0
    return np.where(flat, 1.0, (scores - low) / np.where(flat, 1.0, spread))


def _sorted_rows(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each query's values sorted, as rows of a matrix (fillers after them), with the sort order and which cells
    hold values."""
    padded = _padded(values, counts, np.inf)  # fillers sort last in every row
    order = np.argsort(padded, axis=1, kind="stable")
    ordered = np.take_along_axis(padded, order, axis=1)
    valid = np.arange(padded.shape[1]) < counts[:, None]
    return order, ordered, valid


def _jenks(ordered: np.ndarray, counts: np.ndarray, valid: np.ndarray, classes: int) -> dict[int, np.ndarray]:
    """Row → jenkspy's breaks (the lowest value, then the highest of each class) of every row with at least
    ``classes`` distinct values: the rows Jenks applies to."""
    changes = (ordered[:, 1:] != ordered[:, :-1]) & valid[:, 1:]
    rows = np.flatnonzero(changes.sum(axis=1) + (counts > 0) >= classes)
    return {row: np.asarray(jenks._jenks_breaks(ordered[row, :counts[row]], classes)) for row in rows.tolist()}


def _class_ranks(values: np.ndarray, counts: np.ndarray, classes: int) -> np.ndarray:
    """Per hit, 0 when its value is in its query's top class, 1 for the next class down, ... .

    With at least ``classes`` distinct values in a query, its classes are
    Fisher-Jenks natural breaks (jenkspy's C routine on the query's sorted
    values; a value equal to a break belongs to the class below it, as
    jenkspy's own ``JenksNaturalBreaks`` assigns it). jenkspy's public
    ``jenks_breaks`` is not called: its input checks (finiteness, distinct
    values, conversions of a list) cost more than the breaks, and both are
    established here for the whole batch. With fewer distinct values Jenks is
    undefined, and each distinct value is its own class. Either way the
    classes that hold values are ranked from the top, so the top class
    always maps to the top label and no label is skipped.
    """
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    order, ordered, valid = _sorted_rows(values, counts)
    breaks = _jenks(ordered, counts, valid, classes)
    jenks_rows = np.fromiter(breaks, dtype=np.int64, count=len(breaks))
    inner = np.array([breaks[row][1:-1] for row in jenks_rows.tolist()]).reshape(len(jenks_rows), classes - 1)
    keys = ordered.copy()  # a value's class key: its class index under Jenks, else the value itself
    keys[jenks_rows] = (inner[:, None, :] < ordered[jenks_rows][:, :, None]).sum(axis=2)
    new_class = np.zeros_like(valid)
    new_class[:, 1:] = (keys[:, 1:] != keys[:, :-1]) & valid[:, 1:]
    from_bottom = np.cumsum(new_class, axis=1)
    distinct = from_bottom[np.arange(len(counts)), np.maximum(counts - 1, 0)]
    ranks = np.empty_like(from_bottom)
    np.put_along_axis(ranks, order, distinct[:, None] - from_bottom, axis=1)
    return ranks[valid]


def class_bounds(values: np.ndarray, counts: np.ndarray, classes: int) -> list[list[float]]:
    """Per query, the bounds of the classes :func:`_class_ranks` puts its values in: the lowest value, then the
    highest value of each class from the lowest class up.

    Where Jenks applies these are jenkspy's breaks (each break is the highest value of the class below it);
    where it does not, each distinct value is a class and is its own bound.  A query without values has none.
    """
    if not len(values):
        return [[] for _ in counts]
    _, ordered, valid = _sorted_rows(values, counts)
    breaks = _jenks(ordered, counts, valid, classes)
    bounds = []
    for row, count in enumerate(counts.tolist()):
        if row in breaks:
            bounds.append(breaks[row].tolist())
        else:
            distinct = np.unique(ordered[row, :count]).tolist()
            bounds.append(distinct[:1] + distinct)
    return bounds


def _jenks_input(scores: np.ndarray, counts: np.ndarray, is_self: np.ndarray, config: ClirConfig,
                 names: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which hits enter normalisation and Jenks (all, or all but the own article), their normalised scores and how
    many there are per query."""
    query = _query_of_hit(counts)
    own = np.bincount(query[is_self], minlength=len(counts))
    if (own > 1).any():
        raise ValueError(f"{_where(names[int(np.argmax(own > 1))])}more than one hit is flagged as the query's own article")
    ranked = np.ones_like(is_self) if config.self_in_jenks else ~is_self
    ranked_counts = np.bincount(query[ranked], minlength=len(counts))
    return ranked, normalise_batch(scores[ranked], ranked_counts, config.normalisation, names), ranked_counts


def label_ranked(scores: np.ndarray, counts: np.ndarray, is_self: np.ndarray, config: ClirConfig,
                 names: Sequence[str | None]) -> np.ndarray:
    """Labels 1-6 (int8) for a batch's hits, aligned with ``scores`` (each query's hits in rank order).

    The own article (``is_self``) gets 6. Unless ``config.self_in_jenks``, it is
    left out of normalisation and Jenks, so its large score does not squeeze the
    other hits into the lower classes. Equal scores always get equal labels.
    """
    ranked, normalised, ranked_counts = _jenks_input(scores, counts, is_self, config, names)
    labels = np.full(len(scores), SELF_LABEL, dtype=np.int8)
    labels[ranked] = TOP_CLASS_LABEL - _class_ranks(normalised, ranked_counts, config.classes)
    labels[is_self] = SELF_LABEL
    return labels


def label_breaks(scores: np.ndarray, counts: np.ndarray, is_self: np.ndarray, config: ClirConfig,
                 names: Sequence[str | None]) -> list[list[float]]:
    """Per query of a batch (given as to :func:`label_ranked`), the bounds of the classes its labels 1-5 come from,
    over its normalised scores (:func:`class_bounds`): the breaks the labelling used."""
    _, normalised, ranked_counts = _jenks_input(np.asarray(scores, dtype=np.float64), counts, is_self, config, names)
    return class_bounds(normalised, ranked_counts, config.classes)


@dataclass(frozen=True)
class LabelledHits:
    """A batch's labelled rows as columns, query after query: its hits, then its appended own article if any."""

    query: np.ndarray  # position of the row's query in the batch
    rank: np.ndarray  # 1-based rank of a hit; 0 for an appended own article, which was not retrieved
    doc_id: np.ndarray
    label: np.ndarray

    @property
    def retrieved(self) -> np.ndarray:
        """Which rows are hits (the others are appended own articles), in the order of the batch's flat hits."""
        return self.rank > 0


def _check_distinct(doc_ids: np.ndarray, counts: np.ndarray, names: Sequence[str | None]) -> None:
    """A document listed twice for one query is a backend fault, named here rather than labelled twice."""
    ordered = np.sort(_padded(doc_ids, counts, _NO_DOC), axis=1)
    repeats = (ordered[:, 1:] == ordered[:, :-1]) & (np.arange(1, ordered.shape[1]) < counts[:, None])
    if repeats.any():
        raise ValueError(f"query {names[int(np.argmax(repeats.any(axis=1)))]}: a document appears twice among the hits")


def label_batch(doc_ids: np.ndarray, scores: np.ndarray, counts: np.ndarray, self_doc_ids: np.ndarray,
                config: ClirConfig, names: Sequence[str | None], has_self: np.ndarray | None = None) -> LabelledHits:
    """The labelled hits of a batch of queries, plus each query's own article when it must be added.

    ``self_doc_ids`` holds each query's own article (ignored where
    ``has_self`` is False). With ``config.force_self_label`` an own article
    that retrieval did not return is labelled 6 all the same, and appended
    after its query's hits; without it, it stays unlabelled (0).
    """
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    has_self = np.ones(len(counts), dtype=bool) if has_self is None else has_self
    _check_distinct(doc_ids, counts, names)
    query = _query_of_hit(counts)
    is_self = (doc_ids == np.repeat(self_doc_ids, counts)) & np.repeat(has_self, counts)
    labels = label_ranked(scores, counts, is_self, config, names)
    rank = np.arange(1, len(doc_ids) + 1) - np.repeat(np.cumsum(counts) - counts, counts)
    missing = has_self & (np.bincount(query[is_self], minlength=len(counts)) == 0) if config.force_self_label \
        else np.zeros(len(counts), dtype=bool)
    # an appended row goes after its query's last hit: at that query's end in the flat arrays
    at = np.cumsum(counts)[missing]
    appended = np.flatnonzero(missing)
    return LabelledHits(
        query=np.insert(query, at, appended),
        rank=np.insert(rank, at, 0),
        doc_id=np.insert(doc_ids, at, np.asarray(self_doc_ids, dtype=np.int64)[appended]),
        label=np.insert(labels, at, SELF_LABEL),
    )


def normalise(scores: Sequence[float], method: str, *, query_id: str | None = None) -> list[float]:
    """One query's scores mapped to [0, 1] (:func:`normalise_batch` for one query)."""
    return normalise_batch(np.asarray(scores, dtype=np.float64), np.array([len(scores)]), method, [query_id]).tolist()


def label_query(
    scores: Sequence[float], is_self: Sequence[bool], config: ClirConfig, *, query_id: str | None = None
) -> list[int]:
    """Labels 1-6 for one query's top-K hits (given in rank order), aligned with ``scores`` (see :func:`label_ranked`).

    ``query_id`` only names the query in error messages.
    """
    if len(scores) != len(is_self):
        raise ValueError(f"{_where(query_id)}{len(scores)} scores but {len(is_self)} is_self flags")
    return label_ranked(np.asarray(scores, dtype=np.float64), np.array([len(scores)]), np.asarray(is_self, dtype=bool),
                        config, [query_id]).tolist()


def label_hits(
    doc_ids: Sequence[int], scores: Sequence[float], self_doc_id: int | None, config: ClirConfig,
    *, query_id: str | None = None,
) -> list[tuple[int, int]]:
    """``(doc_id, label)`` for one query's top-K hits, plus the own article when it must be added (:func:`label_batch`)."""
    if len(doc_ids) != len(scores):
        raise ValueError(f"query {query_id}: {len(doc_ids)} doc ids but {len(scores)} scores")
    labelled = label_batch(np.asarray(doc_ids, dtype=np.int64), np.asarray(scores, dtype=np.float64),
                           np.array([len(doc_ids)]), np.array([self_doc_id or 0]), config, [query_id],
                           has_self=np.array([self_doc_id is not None]))
    return list(zip(labelled.doc_id.tolist(), labelled.label.tolist(), strict=True))
