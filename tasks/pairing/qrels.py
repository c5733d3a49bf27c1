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
from array import array
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from tasks.index.corpus import articles_sql
from tasks.pairing.config import ClirConfig
from tasks.pairing.padding import pad
from tasks.pairing.projection import multi_candidates, multi_topics, project
from tasks.pairing.splits import assign_splits
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import CLIR_QREL_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir

UNSPLIT = "full"  # a query beyond the split caps, or in no split: part of the full collection only
READ_ROWS = 100_000  # hits read at a time
QUERY_RANGE = 10_000  # queries whose hits one ordered read holds (about a million rows)
WRITE_ROWS = 500_000  # qrel rows written at a time (a shard or more)


def _query_hits(wh: Warehouse, lang: str) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """(query page id, [(doc page id, label)]) of one language's mining run, query by query in page id order, read
    as they are consumed (a language's hits are its articles times ``top_k`` rows), ``QUERY_RANGE`` queries per
    ordered read."""
    ranges = wh.key_ranges("SELECT DISTINCT query_page_id FROM retrieval_hits WHERE lang = ?", [lang], QUERY_RANGE)
    current, hits = None, []
    for low, high, _ in ranges:
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


def _write(wh: Warehouse, cell: str, fingerprint: str, rows: Iterable[tuple]) -> StageOutput:
    """The rows (grouped by query) as the cell's shards, ``WRITE_ROWS`` at a time."""
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "clir_qrels", cell, fingerprint),
                         LAKE_TABLES["clir_qrels"], fingerprint)
    rows, queries, last = iter(rows), 0, None
    while chunk := list(itertools.islice(rows, WRITE_ROWS)):
        columns = dict(zip(CLIR_QREL_SCHEMA.names, map(list, zip(*chunk, strict=True)), strict=True))
        for query_id in columns["query_id"]:
            if query_id != last:
                queries, last = queries + 1, query_id
        writer.add_table(pa.table(columns, schema=CLIR_QREL_SCHEMA))
    wh.replace_cell("clir_qrels", cell, fingerprint, writer.shards)
    return StageOutput(rows=writer.rows, message=f"{queries} queries")


def build_bi(wh: Warehouse, collection: str, src: str, tgt: str, config: ClirConfig, cell: str, fingerprint: str) -> StageOutput:
    """Qrels of the BI direction ``src``→``tgt``: projected labels, QID-disjoint split, padding.

    The projected judgements are kept as flat arrays (a query's slice of doc ids and labels), not as Python
    tuples, since every judged query must be known before the splits are drawn.
    """
    src_qids, tgt_qids = _qids(wh, src), _qids(wh, tgt)
    tgt_by_qid = {qid: page_id for page_id, qid in tgt_qids.items()}
    pool = sorted(tgt_qids) if config.pad else []
    queries, ends, docs, labels = array("q"), array("q"), array("q"), array("b")
    for query_id, hits in _query_hits(wh, src):
        query_qid = src_qids.get(query_id)
        if query_qid is None:
            continue
        projected = project(query_qid, [(src_qids.get(doc), label) for doc, label in hits], tgt_by_qid,
                            force_self=config.force_self_label)
        if any(label > 0 for _, label in projected):
            queries.append(query_id)
            docs.extend(doc for doc, _ in projected)
            labels.extend(label for _, label in projected)
            ends.append(len(docs))
    splits = _split_of({q: src_qids[q] for q in queries}, (src, tgt), config)
    rows = (
        (collection, src, tgt, splits[query_id], query_id, doc_id, label, is_pad)
        for query_id, start, end in zip(queries, [0, *ends[:-1]], ends, strict=True)
        for doc_id, label, is_pad in _padded(list(zip(docs[start:end], labels[start:end], strict=True)),
                                             splits[query_id], pool, config, f"{src}>{tgt}:{query_id}")
    )
    return _write(wh, cell, fingerprint, rows)


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
    return _write(wh, cell, fingerprint, rows)
