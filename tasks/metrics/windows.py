"""A model's headline metric split by where each question stands relative to its knowledge cutoff.

A question is ``before_cutoff`` when one of its supporting articles had appeared by the cutoff (the model may have
read it), ``after_cutoff`` when every supporting article appeared after it (first seen in a dump whose previous
ingested dump is on or after the cutoff), and ``unknown`` otherwise: a model without a cutoff, an article without
a first-appearance date, or one that appeared between a dump before the cutoff and one after it.  The contamination
gap is before minus after, with a paired cluster bootstrap: each resample draws questions from the whole set once
and computes both windows on that same draw.  See docs/live-benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from tasks.metrics.bootstrap import clustered_ratio_ci, clustered_statistic_ci
from tasks.metrics.score import ALL, Score, as_percent
from tasks.warehouse.db import Warehouse

WINDOWS = ("after_cutoff", "before_cutoff", "unknown")
GAP_METRIC = "contamination_gap"
GAP_SUBSET = "window:before-after"


def window_subset(window: str) -> str:
    """The leaderboard ``subset`` of a window's rows."""
    return f"window:{window}"


def question_window(cutoff: date | None, articles: Sequence[tuple[date | None, date | None]]) -> str:
    """The window of a question from its supporting articles' ``(first_dump, appeared_after)`` dates."""
    if cutoff is None or not articles:
        return "unknown"
    if any(first is not None and first <= cutoff for first, _ in articles):
        return "before_cutoff"
    if all(after is not None and after >= cutoff for _, after in articles):
        return "after_cutoff"
    return "unknown"


def item_windows(wh: Warehouse, benchmark: str, cutoff: date | None) -> dict[str, str] | None:
    """item id → window for every item of ``benchmark``; None when no item has a dated supporting article (an
    imported benchmark, whose page ids are another wiki's, or a home without dated dumps): nothing to split."""
    dates = _item_dates(wh, benchmark)
    return None if dates is None else {item: question_window(cutoff, articles) for item, articles in dates.items()}


def instance_windows(wh: Warehouse, benchmark: str, cutoffs: Mapping[str, date]) -> dict[str, dict[str, str]] | None:
    """system → instance id → its item's window relative to that system's cutoff, for what is judged per instance
    (arena battles); None when the benchmark has nothing to split. The dates are read once for every system."""
    dates = _item_dates(wh, benchmark)
    if dates is None:
        return None
    item_of = dict(wh.query("SELECT instance_id, item_id FROM instances WHERE benchmark = ?", [benchmark]))
    return {system: {instance: question_window(cutoff, dates[item]) if item in dates else "unknown"
                     for instance, item in item_of.items()} for system, cutoff in cutoffs.items()}


def _item_dates(wh: Warehouse, benchmark: str) -> dict[str, list[tuple[date | None, date | None]]] | None:
    """item id → its supporting articles' ``(first_dump, appeared_after)``; None when none is dated."""
    rows = wh.query(
        "WITH docs AS (SELECT i.item_id, u.doc.lang AS lang, u.doc.page_id AS page_id FROM qa_items i,"
        " unnest(from_json(i.documents, '[{\"lang\": \"VARCHAR\", \"page_id\": \"BIGINT\"}]')) AS u(doc)"
        " WHERE i.benchmark = ? AND NOT starts_with(i.generator, 'import:'))"
        " SELECT i.item_id, list((dd.first_dump, dd.appeared_after)) FILTER (WHERE docs.lang IS NOT NULL)"
        " FROM qa_items i LEFT JOIN docs USING (item_id)"
        " LEFT JOIN document_dates dd ON dd.lang = docs.lang AND dd.page_id = docs.page_id"
        " WHERE i.benchmark = ? GROUP BY i.item_id", [benchmark, benchmark])
    if not any(first is not None for _, dates in rows for first, _ in dates or []):
        return None
    return {item_id: [tuple(d) for d in dates or []] for item_id, dates in rows}


@dataclass(frozen=True)
class Question:
    """One question's contribution to a headline ratio: ``hits`` over ``size`` (responses or pairs)."""

    question_id: str
    window: str
    hits: float
    size: float


def window_scores(questions: Iterable[Question], setting: str, metric: str, *, lang: str = ALL, seed: int,
                  resamples: int) -> list[Score]:
    """``metric`` (a percentage) of each window with its clustered interval and n, and the gap before − after, as
    rows of the ``lang`` slice."""
    members = list(questions)
    scores = []
    for window in WINDOWS:
        inside = [q for q in members if q.window == window]
        value = as_percent(clustered_ratio_ci([q.hits for q in inside], [q.size for q in inside],
                                              n_resamples=resamples, seed=seed))
        scores.append(Score(setting, lang, window_subset(window), metric, *value, int(sum(q.size for q in inside))))
    dated = [q for q in members if q.window != "unknown"]
    tables = np.array([[q.hits, q.size, 0.0, 0.0] if q.window == "before_cutoff" else [0.0, 0.0, q.hits, q.size]
                       for q in dated]).reshape(-1, 4)
    gap = clustered_statistic_ci(tables, _gap, n_resamples=resamples, seed=seed) if dated else (None, None, None)
    scores.append(Score(setting, lang, GAP_SUBSET, GAP_METRIC, *as_percent(gap), int(tables[:, [1, 3]].sum())))
    return scores


def _gap(sums: np.ndarray) -> np.ndarray:
    """Before-cutoff ratio minus after-cutoff ratio of each summed row; NaN where a window is empty."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums[:, 0] / sums[:, 1] - sums[:, 2] / sums[:, 3]
