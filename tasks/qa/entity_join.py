"""The pairs of articles that share entities, ranked and cut in DuckDB instead of enumerated in Python.

Two articles pair when they share ``min_shared`` entities and lie within the date window. Enumerating every pair
that shares one entity grows with the square of how many articles mention a popular one (25,586 pair rows from 300
synthetic articles, 160 s at 2,000), so the join runs in an in-memory DuckDB: entities become integers, the window
is a condition of the join (a pair too far apart is never counted), and only the ``limit`` best pairs come back, with
how many met the rule in all. Entities mentioned by more than ``max_entity_articles`` articles of a language (a
country, a language, a year) are left out: they pair nearly everything, say little about relatedness, and would make
the join's work quadratic again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import duckdb
import numpy as np
import pyarrow as pa

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROS_PER_DAY = 86_400_000_000
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Side:
    """The articles of one side of a join, in the caller's order (a pair names them by position)."""

    keys: Sequence[str]  # <lang>:<page_id>, the pair id's halves
    page_ids: Sequence[int]
    qids: Sequence[str | None]
    first_seen: Sequence[date | None]  # a live build's first-appearance dates, compared when both have one
    timestamps: Sequence[datetime | None]  # else the last revisions, compared when both have one
    evidence: Sequence[frozenset[str]]  # the entities each can share


@dataclass(frozen=True)
class Ranked:
    """The best pairs (positions in the left and right sides, shared-entity count), how many pairs met the rule,
    and the entities left out as too common."""

    pairs: list[tuple[int, int, int]]
    total: int
    hubs: frozenset[str]


def top_pairs(left: Side, right: Side | None, *, min_shared: int, max_days: float | None,
              max_entity_articles: int | None, limit: int) -> Ranked:
    """Pairs of a ``left`` and a ``right`` article sharing ``min_shared`` entities (not counting hubs) and at most
    ``max_days`` apart (where both dates are known), best first: most shared entities, then the lowest pair id
    (``<left key>~<right key>``), at most ``limit`` of them.

    ``right=None`` pairs the left articles among themselves, each unordered pair once (lower page id on the left).
    Otherwise a pair joins two different entities: both articles need a QID and the QIDs differ.
    """
    codes: dict[str, int] = {}
    sides = [left] if right is None else [left, right]
    postings = [_postings(side, codes) for side in sides]
    hub_codes = set()
    if max_entity_articles is not None:
        for _, entities in postings:
            counts = np.bincount(entities, minlength=len(codes))
            hub_codes.update(np.flatnonzero(counts > max_entity_articles).tolist())
    hubs = frozenset(entity for entity, code in codes.items() if code in hub_codes)
    con = duckdb.connect()
    try:
        names = ["l"] if right is None else ["l", "r"]
        for name, side, (articles, entities) in zip(names, sides, postings, strict=True):
            keep = ~np.isin(entities, list(hub_codes)) if hub_codes else np.ones(len(entities), dtype=bool)
            con.register(f"{name}_articles", _article_table(side, codes))
            con.register(f"{name}_postings", pa.table({"i": articles[keep], "e": entities[keep]}))
        other = "l" if right is None else "r"
        pairing = "y.page > x.page" if right is None else "x.q >= 0 AND y.q >= 0 AND x.q <> y.q"
        window = "TRUE" if max_days is None else (
            "CASE WHEN x.f IS NOT NULL AND y.f IS NOT NULL THEN abs(x.f - y.f) <= $days"
            " WHEN x.us IS NOT NULL AND y.us IS NOT NULL THEN abs(x.us - y.us) <= $micros ELSE TRUE END")
        sql = f"""
            WITH x AS (SELECT * FROM l_postings JOIN l_articles USING (i)),
                 y AS (SELECT * FROM {other}_postings JOIN {other}_articles USING (i)),
                 met AS (SELECT x.i AS a, y.i AS b, count(*) AS shared FROM x JOIN y ON x.e = y.e
                         WHERE {pairing} AND {window} GROUP BY x.i, y.i HAVING count(*) >= $min_shared)
            SELECT met.a, met.b, met.shared, count(*) OVER () AS total FROM met
            JOIN l_articles la ON la.i = met.a JOIN {other}_articles ra ON ra.i = met.b
            ORDER BY met.shared DESC, la.key || '~' || ra.key LIMIT $limit"""
        params: dict[str, object] = {"min_shared": min_shared, "limit": limit}
        if max_days is not None:
            params |= {"days": max_days, "micros": max_days * MICROS_PER_DAY}
        rows = con.execute(sql, params).fetchall()
    finally:
        con.close()
    return Ranked([(a, b, shared) for a, b, shared, _ in rows], rows[0][3] if rows else 0, hubs)


def _postings(side: Side, codes: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(article position, entity code) for every entity of every article."""
    articles, entities = [], []
    for position, evidence in enumerate(side.evidence):
        for entity in evidence:
            articles.append(position)
            entities.append(codes.setdefault(entity, len(codes)))
    return np.asarray(articles, dtype=np.int64), np.asarray(entities, dtype=np.int64)


def _article_table(side: Side, codes: dict[str, int]) -> pa.Table:
    """One row per article: position, key, page id, QID code (-1 without, so a QID compares as an integer), dates."""
    return pa.table({
        "i": pa.array(range(len(side.keys)), pa.int64()),
        "key": pa.array(side.keys, pa.string()),
        "page": pa.array(side.page_ids, pa.int64()),
        "q": pa.array([codes.setdefault(qid, len(codes)) if qid else -1 for qid in side.qids], pa.int64()),
        "f": pa.array([day.toordinal() if day else None for day in side.first_seen], pa.int64()),
        "us": pa.array([(stamp - EPOCH) // MICROSECOND if stamp else None for stamp in side.timestamps], pa.int64()),
    })
