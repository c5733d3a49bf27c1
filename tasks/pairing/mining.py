"""CLIR mining: index one language, search every title, label each query's hits.

Queries are the titles of the language's articles (redirects and
disambiguation pages are neither queries nor documents). Searching and
labelling run in batches on the compute backend; each batch writes its own
Parquet shard of ``retrieval_hits`` and the flow process registers them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa
from upath import UPath

from tasks import compute
from tasks.index.base import Hit, IndexConfig
from tasks.index.corpus import articles_sql
from tasks.index.registry import get_backend
from tasks.pairing.config import ClirConfig
from tasks.pairing.labels import label_batch, normalise_batch
from tasks.progress import Progress
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, RETRIEVAL_HIT_SCHEMA, Shard, ShardWriter, cell_dir

log = logging.getLogger(__name__)

QUERY_BATCH = 2_000


@dataclass(frozen=True)
class QueryBatch:
    """A slice of one language's title queries for a worker."""

    index: int
    lang: str
    backend: str
    index_path: str
    page_ids: tuple[int, ...]
    titles: tuple[str, ...]


_HIT = np.dtype([("doc_id", np.int64), ("score", np.float64)])


def flat_hits(results: Sequence[Sequence[Hit]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch's search results as flat columns: hits per query, then every hit's doc_id and score, query after query."""
    counts = np.fromiter(map(len, results), dtype=np.int64, count=len(results))
    hits = np.fromiter(chain.from_iterable(results), dtype=_HIT, count=int(counts.sum()))
    return counts, hits["doc_id"], hits["score"]


def _spread(values: np.ndarray, retrieved: np.ndarray) -> np.ndarray:
    """``values`` (one per hit) aligned with the labelled rows; the appended rows get NaN, masked out as nulls."""
    spread = np.full(len(retrieved), np.nan)
    spread[retrieved] = values
    return spread


def mine_batch(batch: QueryBatch, *, index_config: IndexConfig, clir: ClirConfig, lake_root: UPath,
               directory: UPath, fingerprint: str) -> list[Shard]:
    """Search, normalise and label one batch of queries; write its hits as one shard (runs on a worker)."""
    results = get_backend(batch.backend).search(Path(batch.index_path), batch.lang, list(batch.titles), clir.top_k, index_config)
    counts, doc_ids, scores = flat_hits(results)
    names = [str(query_id) for query_id in batch.page_ids]  # for error messages
    query_ids = np.asarray(batch.page_ids, dtype=np.int64)
    labelled = label_batch(doc_ids, scores, counts, query_ids, clir, names)
    not_retrieved = ~labelled.retrieved  # an appended own article has no rank or score
    columns = {
        "lang": pa.repeat(pa.scalar(batch.lang, pa.string()), len(labelled.rank)),
        "query_page_id": query_ids[labelled.query],
        "rank": pa.array(labelled.rank.astype(np.int32), mask=not_retrieved),
        "doc_page_id": labelled.doc_id,
        "score": pa.array(_spread(scores, labelled.retrieved), mask=not_retrieved),
        "norm_score": pa.array(_spread(normalise_batch(scores, counts, clir.normalisation, names), labelled.retrieved),
                               mask=not_retrieved),
        "label": labelled.label,
    }
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
    with Progress(f"retrieval {lang}", len(batches), "query", parts="batch") as progress:
        shard_lists = compute.map_parallel(mine_batch, batches, progress=progress,
                                           count=lambda batch, _: len(batch.page_ids), index_config=index_config,
                                           clir=clir, lake_root=wh.lake_root, directory=directory,
                                           fingerprint=fingerprint)
    shards = [shard for shards in shard_lists for shard in shards]
    wh.replace_cell("retrieval_hits", lang, fingerprint, shards)
    log.info("retrieval[%s]: %d queries, %d hit rows", lang, len(articles), sum(s.rows for s in shards))
    return StageOutput(rows=sum(s.rows for s in shards), message=f"{len(articles)} queries")
