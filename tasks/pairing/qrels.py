"""Assemble CLIR collections from labelled monolingual hits: BI per direction, MULTI per query language.

BI X→Y: each X title query's labelled X hits are projected through their QIDs
onto Y articles. MULTI: for a topic present in every chosen language, a query
in X gets, for every other language Y, Y's own monolingual judgements for Y's
title of that topic. Queries are kept when they have at least one relevant
(label > 0) target document; splits are QID-disjoint. Queries of a base split
are padded (CLIRMatrix pads the 'base' collection only) and padding is flagged;
a query in no base split (full collection only) holds just its judgements.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from tasks.index.corpus import articles_sql
from tasks.pairing.config import SELF_LABEL, ClirConfig
from tasks.pairing.padding import pad
from tasks.pairing.projection import multi_candidates, multi_topics
from tasks.pairing.splits import assign_splits
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import CLIR_QREL_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir

UNSPLIT = "full"  # a query beyond the split caps, or in no split: part of the full collection only
READ_ROWS = 100_000  # hits read at a time
QUERY_RANGE = 10_000  # queries whose hits one ordered read holds (about a million rows)
WRITE_ROWS = 500_000  # qrel rows written at a time (a shard or more)


def _query_ranges(wh: Warehouse, lang: str) -> list[tuple[int, int]]:
    """The first and last query page id of each run of ``QUERY_RANGE`` queries of one language's mining run."""
    return [(low, high) for low, high, _ in wh.key_ranges(
        "SELECT DISTINCT query_page_id FROM retrieval_hits WHERE lang = ?", [lang], QUERY_RANGE)]


def _query_hits(wh: Warehouse, lang: str) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """(query page id, [(doc page id, label)]) of one language's mining run, query by query in page id order, read
    as they are consumed (a language's hits are its articles times ``top_k`` rows), ``QUERY_RANGE`` queries per
    ordered read."""
    current, hits = None, []
    for low, high in _query_ranges(wh, lang):
        for rows in wh.batches("SELECT query_page_id, doc_page_id, label FROM retrieval_hits WHERE lang = ?"
                               " AND query_page_id BETWEEN ? AND ? ORDER BY query_page_id, coalesce(rank, 2147483647)",
                               [lang, low, high], size=READ_ROWS):
            for query_id, doc_id, label in rows:
                if query_id != current:
                    if current is not None:
                        yield current, hits
                    current, hits = query_id, []
                hits.append((doc_id, label))
    if current is not None:
        yield current, hits


def _qids(wh: Warehouse, lang: str) -> dict[int, str]:
    return {page_id: qid for page_id, qid in wh.query(articles_sql("page_id, qid"), [lang]) if qid}


def _split_of(per_query_qid: dict[int, str], direction: tuple[str, str], config: ClirConfig) -> dict[int, str]:
    chosen = assign_splits({direction: sorted(set(per_query_qid.values()))}, config)[direction]
    split_by_qid = {qid: name for name, qids in chosen.items() for qid in qids}
    return {query: split_by_qid.get(qid, UNSPLIT) for query, qid in per_query_qid.items()}


def _row_tables(rows: Iterable[tuple]) -> Iterator[pa.Table]:
    """Rows (grouped by query) as tables of ``WRITE_ROWS``."""
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, WRITE_ROWS)):
        yield pa.table(dict(zip(CLIR_QREL_SCHEMA.names, map(list, zip(*chunk, strict=True)), strict=True)),
                       schema=CLIR_QREL_SCHEMA)


def _write(wh: Warehouse, cell: str, fingerprint: str, tables: Iterable[pa.Table]) -> StageOutput:
    """The tables (a query's rows together) as the cell's shards."""
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "clir_qrels", cell, fingerprint),
                         LAKE_TABLES["clir_qrels"], fingerprint)
    queries, last = 0, None
    for table in tables:
        query_ids = table.column("query_id").to_numpy()
        if len(query_ids):
            queries += int(np.count_nonzero(_first_of_runs(query_ids))) - int(query_ids[0] == last)
            last = query_ids[-1]
        writer.add_table(table)
    wh.replace_cell("clir_qrels", cell, fingerprint, writer.shards)
    return StageOutput(rows=writer.rows, message=f"{queries} queries")


@dataclass(frozen=True)
class _Items:
    """A language's page ids (sorted) and an integer for each page's Wikidata item; the integers are shared by the
    languages of one build, so that items compare as integers across languages."""

    pages: np.ndarray
    items: np.ndarray

    @classmethod
    def of(cls, page_qids: dict[int, str], numbering: dict[str, int]) -> _Items:
        pages = np.fromiter(page_qids, dtype=np.int64, count=len(page_qids))
        items = np.fromiter((numbering.setdefault(qid, len(numbering)) for qid in page_qids.values()),
                            dtype=np.int64, count=len(page_qids))
        order = np.argsort(pages, kind="stable")
        return cls(pages[order], items[order])

    def pages_of(self, items: int) -> np.ndarray:
        """For each of ``items`` item numbers, this language's page about it (-1: none); of two pages about one
        item, the last in page-id order, as a dictionary built in that order keeps it."""
        pages = np.full(items, -1, dtype=np.int64)
        numbers, last = np.unique(self.items[::-1], return_index=True)
        pages[numbers] = self.pages[::-1][last]
        return pages

    def lookup(self, page_ids: np.ndarray) -> np.ndarray:
        """The item of each of ``page_ids``, -1 for a page without one."""
        if not len(self.pages):
            return np.full(len(page_ids), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.pages, page_ids), len(self.pages) - 1)
        return np.where(self.pages[at] == page_ids, self.items[at], -1)


def _range_hits(wh: Warehouse, lang: str) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(query, doc, label) arrays of one language's hits, ``QUERY_RANGE`` queries at a time, in no order."""
    for low, high in _query_ranges(wh, lang):
        hits = pa.Table.from_batches(list(wh.arrow_batches(
            "SELECT query_page_id, doc_page_id, label FROM retrieval_hits WHERE lang = ? AND query_page_id BETWEEN ?"
            " AND ?", [lang, low, high])))
        yield tuple(hits.column(name).to_numpy() for name in ("query_page_id", "doc_page_id", "label"))


def _first_of_runs(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal ``keys`` starts, in rows sorted by them."""
    first = np.ones(len(keys[0]), dtype=bool)
    if len(first) > 1:
        first[1:] = np.logical_or.reduce([key[1:] != key[:-1] for key in keys])
    return first


def _projected(query: np.ndarray, doc: np.ndarray, label: np.ndarray, src: _Items, target_of_item: np.ndarray,
               force_self: bool, lang: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`tasks.pairing.projection.project` for many queries at once: ``(query, target doc, label)`` rows, a
    query's rows together, best label first and then by doc id; a query without an item, or without a relevant
    target document, is left out."""
    query_item, doc_item = src.lookup(query), src.lookup(doc)
    judged = query_item >= 0
    bad = judged & ((label < 0) | (label > SELF_LABEL))
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{lang} query {int(query[at])}: label {int(label[at])} of document {int(doc[at])} is outside"
                         f" 0-{SELF_LABEL}")
    target = np.where(doc_item >= 0, target_of_item[np.maximum(doc_item, 0)], -1)
    kept = judged & (target >= 0)
    rows = [query[kept], target[kept], np.where(doc_item == query_item, SELF_LABEL, label)[kept].astype(np.int8)]
    if force_self:
        queries, first = np.unique(query[judged], return_index=True)
        own = target_of_item[query_item[judged][first]]
        rows = [np.concatenate((rows[0], queries[own >= 0])), np.concatenate((rows[1], own[own >= 0])),
                np.concatenate((rows[2], np.full(int(np.count_nonzero(own >= 0)), SELF_LABEL, dtype=np.int8)))]
    query, target, grade = rows
    order = np.lexsort((-grade, target, query))  # one row per target document: its best grade
    query, target, grade = query[order], target[order], grade[order]
    first = _first_of_runs(query, target)
    query, target, grade = query[first], target[first], grade[first]
    order = np.lexsort((target, -grade, query))
    query, target, grade = query[order], target[order], grade[order]
    relevant = np.isin(query, query[grade > 0])
    return query[relevant], target[relevant], grade[relevant]


def build_bi(wh: Warehouse, collection: str, src: str, tgt: str, config: ClirConfig, cell: str, fingerprint: str) -> StageOutput:
    """Qrels of the BI direction ``src``→``tgt``: projected labels, QID-disjoint split, padding.

    Projected as arrays, range of queries after range of queries (a language's hits are its articles times
    ``top_k`` rows: at a million articles, Python objects per hit cost minutes and gigabytes), twice: the splits
    are drawn over every judged query, so a first pass finds those, and the second writes each range's rows as it
    projects them. Keeping every range's judgements until the splits were known held 1.7 GB per direction at a
    million articles, and grew with the language; a second pass costs a read of the hits.
    """
    src_qids, tgt_qids = _qids(wh, src), _qids(wh, tgt)
    numbering: dict[str, int] = {}
    src_items, tgt_items = _Items.of(src_qids, numbering), _Items.of(tgt_qids, numbering)
    target_of_item = tgt_items.pages_of(len(numbering))

    def projected() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each range's ``(query, target doc, label)`` rows; ranges and their queries come in page-id order."""
        for hits in _range_hits(wh, src):
            yield _projected(*hits, src_items, target_of_item, config.force_self_label, src)

    judged = [queries[_first_of_runs(queries)] for queries, _, _ in projected()]
    query_ids = np.concatenate(judged) if judged else np.zeros(0, dtype=np.int64)
    splits = _split_of({query_id: src_qids[query_id] for query_id in query_ids.tolist()}, (src, tgt), config)
    pool = sorted(tgt_qids) if config.pad else []
    return _write(wh, cell, fingerprint, (
        table for queries, docs, labels in projected()
        for table in _bi_tables(collection, src, tgt, queries, docs, labels.astype(np.int8), splits, pool, config)))


def _bi_tables(collection: str, src: str, tgt: str, queries: np.ndarray, docs: np.ndarray, labels: np.ndarray,
               splits: dict[int, str], pool: Sequence[int], config: ClirConfig) -> Iterator[pa.Table]:
    """Rows of the direction (a query's rows together), about ``WRITE_ROWS`` at a time: a query's judgements as
    they are, or padded (a query of a base split, :func:`_padded`) one query at a time."""
    starts = np.flatnonzero(_first_of_runs(queries))
    query_ids, bounds = queries[starts], np.append(starts, len(queries))
    split_of = np.array([splits[query_id] for query_id in query_ids.tolist()], dtype=object)
    padded = np.array([config.pad and split != UNSPLIT for split in split_of.tolist()], dtype=bool)
    first = 0
    while first < len(query_ids):
        last = max(first + 1, int(np.searchsorted(bounds, bounds[first] + WRITE_ROWS, side="right")) - 1)
        counts = np.diff(bounds[first:last + 1])
        of_row = np.repeat(np.arange(first, last), counts)
        plain = ~padded[of_row]
        rows = slice(int(bounds[first]), int(bounds[last]))
        query_column, doc_column, label_column = ([np.repeat(query_ids[first:last], counts)[plain]],
                                                  [docs[rows][plain]], [labels[rows][plain]])
        split_column, pads = split_of[of_row][plain].tolist(), [False] * int(np.count_nonzero(plain))
        for position in np.flatnonzero(padded[first:last]).tolist():
            query = first + position
            query_id, start, end = int(query_ids[query]), int(bounds[query]), int(bounds[query + 1])
            padding = _padded(list(zip(docs[start:end].tolist(), labels[start:end].tolist(), strict=True)),
                              split_of[query], pool, config, f"{src}>{tgt}:{query_id}")
            query_column.append(np.full(len(padding), query_id, dtype=np.int64))
            doc_column.append(np.array([row[0] for row in padding], dtype=np.int64))
            label_column.append(np.array([row[1] for row in padding], dtype=np.int8))
            split_column += [split_of[query]] * len(padding)
            pads += [row[2] for row in padding]
        columns = [np.concatenate(column) for column in (query_column, doc_column, label_column)]
        count = len(columns[0])
        yield pa.table({"collection": pa.repeat(pa.scalar(collection, pa.string()), count),
                        "src_lang": pa.repeat(pa.scalar(src, pa.string()), count),
                        "tgt_lang": pa.repeat(pa.scalar(tgt, pa.string()), count),
                        "split": pa.array(split_column, pa.string()), "query_id": columns[0], "doc_id": columns[1],
                        "label": columns[2], "is_pad": pa.array(pads, pa.bool_())}).cast(CLIR_QREL_SCHEMA)
        first = last


def _padded(results: Sequence[tuple[int, int]], split: str, pool: Sequence[int], config: ClirConfig,
            key: str) -> list[tuple[int, int, bool]]:
    """One query's rows ``(doc_id, label, is_pad)``: padded when it is in a base split, its judgements alone otherwise.

    A query beyond the split caps is part of the full collection only, which
    CLIRMatrix publishes unpadded; padding it would only add label-0 rows that
    no export writes and no metric counts.
    """
    if not config.pad or split == UNSPLIT:
        return [(doc_id, label, False) for doc_id, label in results]
    return pad(results, pool, config.top_k, config.pad_seed, key)


def build_multi(wh: Warehouse, collection: str, langs: Sequence[str], src: str, config: ClirConfig,
                cell: str, fingerprint: str) -> StageOutput:
    """MULTI qrels for queries in ``src``: per other language, that language's own judgements of the topic.

    ``langs`` are the collection's MULTI languages (``ClirConfig.multi_langs``
    of the build): only topics with a query in every one of them are kept.
    """
    qids = {lang: _qids(wh, lang) for lang in langs}
    judgements = {lang: {qids[lang][query]: hits for query, hits in _query_hits(wh, lang) if query in qids[lang]}
                  for lang in langs}
    pools = {lang: sorted(qids[lang]) if config.pad else [] for lang in langs}
    query_of_topic = {qid: page_id for page_id, qid in qids[src].items()}
    topics = multi_topics(judgements, list(langs))
    splits = _split_of({query_of_topic[t]: t for t in topics}, (src, "multi"), config)
    rows = (
        (collection, src, tgt, splits[query_of_topic[topic]], query_of_topic[topic], doc_id, label, is_pad)
        for topic in topics
        for tgt, candidates in sorted(multi_candidates(src, topic, judgements, list(langs)).items())
        for doc_id, label, is_pad in _padded(candidates, splits[query_of_topic[topic]], pools[tgt], config,
                                             f"{src}>{tgt}:{topic}")
    )
    return _write(wh, cell, fingerprint, _row_tables(rows))
