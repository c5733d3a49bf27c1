"""CLIR mining: index one language, search every title, label each query's hits.

Queries are the titles of the language's articles (redirects and
disambiguation pages are neither queries nor documents). Searching and
labelling run in batches on the compute backend; each batch writes its own
Parquet shard of ``retrieval_hits`` and the flow process registers them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from tasks import compute
from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend
from tasks.pairing.config import ClirConfig
from tasks.pairing.labels import label_hits, normalise
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, RETRIEVAL_HIT_SCHEMA, Shard, ShardWriter, cell_dir

log = logging.getLogger(__name__)

QUERY_BATCH = 2_000


def articles_sql(columns: str) -> str:
    """A query over one language's articles (``?`` = lang): no redirects, no disambiguation pages."""
    return (f"SELECT {columns} FROM documents WHERE lang = ? AND NOT is_redirect AND NOT is_disambiguation"
            " AND page_id IS NOT NULL ORDER BY page_id")


def index_path(home: Path, backend: str, lang: str, fingerprint: str) -> Path:
    """Where the index stage run with ``fingerprint`` keeps its index (or, for a remote engine, its reference)."""
    return home / "indexes" / backend / lang / fingerprint[:16]


def build_index(wh: Warehouse, lang: str, backend: str, config: IndexConfig, fingerprint: str) -> StageOutput:
    """Index one language's articles (redirects and disambiguation pages are not documents)."""
    path = index_path(wh.home, backend, lang, fingerprint)
    rows = wh.query(articles_sql("page_id, title, text"), [lang])
    info = get_backend(backend).build(lang, rows, path, config)
    return StageOutput(rows=info.doc_count)


@dataclass(frozen=True)
class QueryBatch:
    """A slice of one language's title queries for a worker."""

    index: int
    lang: str
    backend: str
    index_path: str
    page_ids: tuple[int, ...]
    titles: tuple[str, ...]


def mine_batch(batch: QueryBatch, *, index_config: IndexConfig, clir: ClirConfig, lake_root: Path,
               directory: Path, fingerprint: str) -> list[Shard]:
    """Search, normalise and label one batch of queries; write its hits as one shard (runs on a worker)."""
    results = get_backend(batch.backend).search(Path(batch.index_path), batch.lang, list(batch.titles), clir.top_k, index_config)
    columns: dict[str, list] = {name: [] for name in RETRIEVAL_HIT_SCHEMA.names}
    for query_id, hits in zip(batch.page_ids, results, strict=True):
        doc_ids = [doc for doc, _ in hits]
        scores = [score for _, score in hits]
        labelled = label_hits(doc_ids, scores, query_id, clir, query_id=str(query_id))
        normalised = normalise(scores, clir.normalisation, query_id=str(query_id)) if scores else []
        appended = [None] * (len(labelled) - len(hits))  # an appended own article was not retrieved
        columns["lang"] += [batch.lang] * len(labelled)
        columns["query_page_id"] += [query_id] * len(labelled)
        columns["rank"] += list(range(1, len(hits) + 1)) + appended
        columns["doc_page_id"] += [doc for doc, _ in labelled]
        columns["score"] += scores + appended
        columns["norm_score"] += normalised + appended
        columns["label"] += [label for _, label in labelled]
    writer = ShardWriter(lake_root, directory, LAKE_TABLES["retrieval_hits"], fingerprint, prefix=f"batch-{batch.index:05d}")
    writer.add_table(pa.table(columns, schema=RETRIEVAL_HIT_SCHEMA))
    return writer.shards


def mine_language(wh: Warehouse, lang: str, backend: str, index_path: Path, index_config: IndexConfig,
                  clir: ClirConfig, fingerprint: str) -> StageOutput:
    """Run every title query of ``lang`` against its own index and store the labelled hits."""
    articles = wh.query(articles_sql("page_id, title"), [lang])
    batches = [
        QueryBatch(i // QUERY_BATCH, lang, backend, str(index_path),
                   tuple(p for p, _ in articles[i:i + QUERY_BATCH]), tuple(t for _, t in articles[i:i + QUERY_BATCH]))
        for i in range(0, len(articles), QUERY_BATCH)
    ]
    directory = cell_dir(wh.lake_root, "retrieval_hits", lang, fingerprint)
    shard_lists = compute.map_parallel(mine_batch, batches, index_config=index_config, clir=clir,
                                       lake_root=wh.lake_root, directory=directory, fingerprint=fingerprint)
    shards = [shard for shards in shard_lists for shard in shards]
    wh.replace_cell("retrieval_hits", lang, fingerprint, shards)
    log.info("retrieval[%s]: %d queries, %d hit rows", lang, len(articles), sum(s.rows for s in shards))
    return StageOutput(rows=sum(s.rows for s in shards), message=f"{len(articles)} queries")
