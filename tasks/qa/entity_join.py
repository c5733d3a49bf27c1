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

import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.compute import release_freed_memory

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROS_PER_DAY = 86_400_000_000
MICROSECOND = timedelta(microseconds=1)
#: (left, right) rows sharing an entity that one part of the join may count: its hash tables grow with them, not
#: with the articles (a part is at least one left article, however many rows that one meets)
JOIN_ROWS = 32_000_000
#: what the join's DuckDB may hold before it spills to the temporary folder
JOIN_MEMORY = "1GB"


@dataclass(frozen=True)
class Side:
    """The articles of one side of a join, by position (a pair names them by position); entities are integers.

    Positions and codes are 32-bit: a side holds one (article, entity) posting per entity mentioned, 26 million for
    a million English articles, and each posting is copied into the join's tables.
    """

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

    The left articles are joined a part at a time, each part's best ``limit`` kept with those of the parts before:
    the pairs that share one entity are counted per pair, and at a million articles the pairs of all of them at
    once held 6 GB in DuckDB's hash tables. A part is as many consecutive left articles as meet at most
    ``JOIN_ROWS`` (left, right) rows sharing an entity, counted beforehand from the entities' article counts: a
    part of a fixed number of articles would meet more rows the larger the wiki, as its entities are mentioned by
    more articles.

    ``right=None`` pairs the left articles among themselves, each unordered pair once (lower page id on the left).
    Otherwise a pair joins two different entities: both articles need a QID and the QIDs differ.
    """
    sides = [left] if right is None else [left, right]
    hubs: set[int] = set()
    if max_entity_articles is not None:
        for side in sides:
            counts = np.bincount(side.entities)
            hubs.update(np.flatnonzero(counts > max_entity_articles).tolist())
    kept = [_postings(side, hubs) for side in sides]
    parts = _parts(len(left.page_ids), kept[0], kept[-1][1])
    size = max((int(entities.max()) + 1 for _, entities in kept if len(entities)), default=0)
    by_article = _Runs(*kept[0], len(left.page_ids), by_article=True)
    by_entity = _Runs(*kept[-1], size, by_article=False)
    del kept
    # DuckDB would otherwise hold up to 80% of the machine in its hash tables before spilling (4.9 GB at 1M)
    with tempfile.TemporaryDirectory(prefix="babelbench-join-") as spill, \
            duckdb.connect(config={"memory_limit": JOIN_MEMORY, "temp_directory": spill}) as con:
        con.register("l_articles", _article_table(left))
        con.register("r_articles", _article_table(left if right is None else right))
        pairing = "y.page > x.page" if right is None else "x.q >= 0 AND y.q >= 0 AND x.q <> y.q"
        window = "TRUE" if max_days is None else (
            "CASE WHEN x.f IS NOT NULL AND y.f IS NOT NULL THEN abs(x.f - y.f) <= $days"
            " WHEN x.us IS NOT NULL AND y.us IS NOT NULL THEN abs(x.us - y.us) <= $micros ELSE TRUE END")
        sql = f"""
            WITH x AS (SELECT * FROM x_postings JOIN l_articles USING (i)),
                 y AS (SELECT * FROM y_postings JOIN r_articles USING (i)),
                 met AS (SELECT x.i AS a, y.i AS b, count(*) AS shared FROM x JOIN y ON x.e = y.e
                         WHERE {pairing} AND {window} GROUP BY x.i, y.i HAVING count(*) >= $min_shared)
            SELECT met.a, met.b, met.shared, la.key || '~' || ra.key AS pair, count(*) OVER () AS total FROM met
            JOIN l_articles la ON la.i = met.a JOIN r_articles ra ON ra.i = met.b
            ORDER BY met.shared DESC, pair LIMIT $limit"""
        params: dict[str, object] = {"min_shared": min_shared, "limit": limit}
        if max_days is not None:
            params |= {"days": max_days, "micros": max_days * MICROS_PER_DAY}
        rows, total = [], 0
        for low, high in parts:
            # the part's own postings and the other side's postings of the entities they mention, taken by slices:
            # filtering every posting for each part made the join grow with the square of the wiki's size
            x_articles, x_entities = by_article.between(low, high)
            con.register("x_postings", pa.table({"i": x_articles, "e": x_entities}))
            y_articles, y_entities = by_entity.of(np.unique(x_entities))
            con.register("y_postings", pa.table({"i": y_articles, "e": y_entities}))
            found = con.execute(sql, params).fetchall()
            total += found[0][4] if found else 0
            rows = sorted([*rows, *found], key=lambda row: (-row[2], row[3]))[:limit]
    # the join's freed tables would otherwise stay in the process under the next group's join (0.37 GB at 1M)
    release_freed_memory()
    return Ranked([(a, b, shared) for a, b, shared, _, _ in rows], total, frozenset(hubs))


class _Runs:
    """Postings sorted by article or by entity, with where each one's run starts: a part of the join takes the
    postings of its articles, or of the entities they mention, by slices instead of a filter over every posting."""

    def __init__(self, articles: np.ndarray, entities: np.ndarray, size: int, *, by_article: bool) -> None:
        keys = articles if by_article else entities
        order = np.argsort(keys, kind="stable")
        self.articles, self.entities = articles[order], entities[order]
        self.starts = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys, minlength=size), out=self.starts[1:])

    def between(self, low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
        """The postings of the keys ``low`` to ``high`` (as sorted), one slice."""
        start, end = self.starts[low], self.starts[high + 1]
        return self.articles[start:end], self.entities[start:end]

    def of(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (article, entity) postings of ``keys`` (articles or entities, as sorted), run after run."""
        first, lengths = self.starts[keys], self.starts[keys + 1] - self.starts[keys]
        # position j of the concatenated runs is first[k] + (j - where run k begins)
        at = np.repeat(first - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        return self.articles[at], self.entities[at]


def _postings(side: Side, hubs: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """The side's (article position, entity code) postings that can pair: those of the hubs left out."""
    if not hubs:
        return side.articles, side.entities
    keep = ~np.isin(side.entities, list(hubs))
    return side.articles[keep], side.entities[keep]


def _parts(count: int, left: tuple[np.ndarray, np.ndarray], right_entities: np.ndarray) -> list[tuple[int, int]]:
    """``(first, last)`` positions of the left articles joined together: consecutive runs whose postings meet at
    most :data:`JOIN_ROWS` right postings of the same entity (each article in one run, however many it meets)."""
    articles, entities = left
    if not len(entities):
        return [(0, count - 1)] if count else []
    per_entity = np.bincount(right_entities, minlength=int(entities.max()) + 1)
    met = np.bincount(articles, weights=per_entity[entities], minlength=count)
    ends = np.cumsum(met)
    parts, low = [], 0
    while low < count:
        # the last article whose run from ``low`` meets at most JOIN_ROWS rows, and at least the first one
        high = max(low, int(np.searchsorted(ends, (ends[low - 1] if low else 0) + JOIN_ROWS, side="right")) - 1)
        parts.append((low, high))
        low = high + 1
    return parts


def _article_table(side: Side) -> pa.Table:
    """One row per article: position, key (``<lang>:<page_id>``), page id, QID code, dates."""
    pages = pa.array(side.page_ids, pa.int64())
    return pa.table({
        "i": pa.array(np.arange(len(side.page_ids)), pa.int32()),
        "key": pc.binary_join_element_wise(f"{side.lang}:", pc.cast(pages, pa.string()), ""),
        "page": pages,
        "q": pa.array(side.qids, pa.int32()),
        "f": side.first_seen,
        "us": side.micros,
    })
