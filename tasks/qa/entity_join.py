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

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROS_PER_DAY = 86_400_000_000
MICROSECOND = timedelta(microseconds=1)
#: left articles joined at a time (the memory of a join is that of the pairs its articles meet)
JOIN_CHUNK = 50_000


@dataclass(frozen=True)
class Side:
    """The articles of one side of a join, by position (a pair names them by position); entities are integers."""

    lang: str
    page_ids: np.ndarray
    qids: np.ndarray  # the QID's entity code, -1 without one
    first_seen: pa.Array  # a live build's first-appearance dates (day ordinals), compared when both have one
    micros: pa.Array  # else the last revisions (microseconds since the epoch), compared when both have one
    articles: np.ndarray  # with ``entities``, one (article position, entity code) per entity an article can share
    entities: np.ndarray


@dataclass(frozen=True)
class Ranked:
    """The best pairs (positions in the left and right sides, shared-entity count), how many pairs met the rule,
    and the entities (codes) left out as too common."""

    pairs: list[tuple[int, int, int]]
    total: int
    hubs: frozenset[int]


def top_pairs(left: Side, right: Side | None, *, min_shared: int, max_days: float | None,
              max_entity_articles: int | None, limit: int) -> Ranked:
    """Pairs of a ``left`` and a ``right`` article sharing ``min_shared`` entities (not counting hubs) and at most
    ``max_days`` apart (where both dates are known), best first: most shared entities, then the lowest pair id
    (``<left key>~<right key>``), at most ``limit`` of them.

    The left articles are joined ``JOIN_CHUNK`` at a time, each chunk's best ``limit`` kept with those of the chunks
    before: the pairs that share one entity are counted per pair, and at a million articles the pairs of all of
    them at once held 6 GB in DuckDB's hash tables.

    ``right=None`` pairs the left articles among themselves, each unordered pair once (lower page id on the left).
    Otherwise a pair joins two different entities: both articles need a QID and the QIDs differ.
    """
    sides = [left] if right is None else [left, right]
    hubs: set[int] = set()
    if max_entity_articles is not None:
        for side in sides:
            counts = np.bincount(side.entities)
            hubs.update(np.flatnonzero(counts > max_entity_articles).tolist())
    con = duckdb.connect()
    try:
        names = ["l"] if right is None else ["l", "r"]
        for name, side in zip(names, sides, strict=True):
            keep = ~np.isin(side.entities, list(hubs)) if hubs else np.ones(len(side.entities), dtype=bool)
            con.register(f"{name}_articles", _article_table(side))
            con.register(f"{name}_postings", pa.table({"i": side.articles[keep], "e": side.entities[keep]}))
        other = "l" if right is None else "r"
        pairing = "y.page > x.page" if right is None else "x.q >= 0 AND y.q >= 0 AND x.q <> y.q"
        window = "TRUE" if max_days is None else (
            "CASE WHEN x.f IS NOT NULL AND y.f IS NOT NULL THEN abs(x.f - y.f) <= $days"
            " WHEN x.us IS NOT NULL AND y.us IS NOT NULL THEN abs(x.us - y.us) <= $micros ELSE TRUE END")
        sql = f"""
            WITH x AS (SELECT * FROM l_postings JOIN l_articles USING (i) WHERE i BETWEEN $low AND $high),
                 y AS (SELECT * FROM {other}_postings JOIN {other}_articles USING (i)),
                 met AS (SELECT x.i AS a, y.i AS b, count(*) AS shared FROM x JOIN y ON x.e = y.e
                         WHERE {pairing} AND {window} GROUP BY x.i, y.i HAVING count(*) >= $min_shared)
            SELECT met.a, met.b, met.shared, la.key || '~' || ra.key AS pair, count(*) OVER () AS total FROM met
            JOIN l_articles la ON la.i = met.a JOIN {other}_articles ra ON ra.i = met.b
            ORDER BY met.shared DESC, pair LIMIT $limit"""
        params: dict[str, object] = {"min_shared": min_shared, "limit": limit}
        if max_days is not None:
            params |= {"days": max_days, "micros": max_days * MICROS_PER_DAY}
        rows, total = [], 0
        for low in range(0, len(left.page_ids), JOIN_CHUNK):
            found = con.execute(sql, params | {"low": low, "high": low + JOIN_CHUNK - 1}).fetchall()
            total += found[0][4] if found else 0
            rows = sorted([*rows, *found], key=lambda row: (-row[2], row[3]))[:limit]
    finally:
        con.close()
    return Ranked([(a, b, shared) for a, b, shared, _, _ in rows], total, frozenset(hubs))


def _article_table(side: Side) -> pa.Table:
    """One row per article: position, key (``<lang>:<page_id>``), page id, QID code, dates."""
    pages = pa.array(side.page_ids, pa.int64())
    return pa.table({
        "i": pa.array(np.arange(len(side.page_ids)), pa.int64()),
        "key": pc.binary_join_element_wise(f"{side.lang}:", pc.cast(pages, pa.string()), ""),
        "page": pages,
        "q": pa.array(side.qids, pa.int64()),
        "f": side.first_seen,
        "us": side.micros,
    })
