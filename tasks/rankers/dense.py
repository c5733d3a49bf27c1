"""Dense bi-encoder retrieval with sentence-transformers; document embeddings cached in the lake.

Document vectors are keyed by (model, language, the documents' fingerprint,
device kind, precision), so a second evaluation with the same model and
corpus encodes only queries, and vectors computed in fp16 are never served to
an fp32 run. A corpus is encoded in shards (resumable, see
:mod:`tasks.rankers.embedding_cache`), on every GPU of the machine through
sentence-transformers' process pool when the placement has several.
Search is exact and bounded in memory (:mod:`tasks.rankers.search`), or
through a FAISS index stored beside the cache (:mod:`tasks.rankers.vector_index`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
from upath import UPath

from tasks.errors import ConfigError
from tasks.index.corpus import articles_sql
from tasks.placement import Placement, batch_size, load_bi_encoder
from tasks.rankers import vector_index
from tasks.rankers.base import DEFAULT_DENSE_MODEL, Query, RankerSpec, Ranking
from tasks.rankers.embedding_cache import encode_corpus, load_npz
from tasks.rankers.search import to_device, top_k
from tasks.stage import current_ref, digest
from tasks.text.truncate import truncate
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

RECALL_SAMPLE = 256
"""Queries an approximate index's recall@100 is measured on (against exact search), per language."""

__all__ = ["DenseRanker", "ModelTexts", "top_k"]


class ModelTexts(Sequence[str]):
    """Articles as the model reads them (title, newline, truncated text), made when sliced: truncating a
    million articles takes a CPU minute, which :func:`encode_corpus` spends while the model encodes."""

    def __init__(self, rows: Sequence[tuple[int, str, str | None]], lang: str) -> None:
        self.rows, self.lang = rows, lang

    def __len__(self) -> int:
        return len(self.rows)

    def _text(self, row: tuple[int, str, str | None]) -> str:
        return f"{row[1]}\n{truncate(row[2] or '', self.lang)}"

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._text(row) for row in self.rows[index]]
        return self._text(self.rows[index])


class DenseRanker:
    def __init__(self, model: str, placement: Placement, *, index: str = "exact") -> None:
        if index not in vector_index.INDEX_KINDS:
            raise ConfigError(f"unknown dense index {index!r}: use one of {', '.join(vector_index.INDEX_KINDS)}")
        self.model_name = model
        self.placement = placement
        self.index = index
        # exact and flat return the same rankings, so they share a name; an approximate index is named
        self.name = f"dense@{index}:{model}" if index in vector_index.APPROXIMATE else f"dense:{model}"
        self._searchable: dict[str, tuple[np.ndarray, np.ndarray, Any]] = {}

    @classmethod
    def from_spec(cls, spec: RankerSpec, *, backend: str, placement: Placement) -> DenseRanker:
        """``dense[@INDEX][:MODEL]``: the default model, searched exactly, where not given."""
        return cls(spec.model or DEFAULT_DENSE_MODEL, placement, index=spec.index or "exact")

    @cached_property
    def model(self) -> Any:
        return load_bi_encoder(self.model_name, self.placement)

    def encode(self, texts: Sequence[str], pool: dict | None = None) -> np.ndarray:
        """Unit vectors of ``texts``; queries and cached documents go through this same path, so they compare."""
        return np.asarray(self.model.encode(list(texts), batch_size=batch_size(self.model, self.placement, "bi"),
                                            normalize_embeddings=True, show_progress_bar=False, pool=pool),
                          dtype=np.float32)

    def cache_key(self, documents_fingerprint: str) -> str:
        """The embedding cache's key: the model, the documents, and where and in what precision they were encoded."""
        return digest({"model": self.model_name, "documents": documents_fingerprint, **self.placement.params()})[:16]

    def document_vectors(self, wh: Warehouse, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """(doc ids, vectors) of one language's articles, from the lake cache or freshly encoded."""
        cache = self._cache_path(wh, lang)
        if cache.exists():
            return load_npz(cache)
        rows = wh.query(articles_sql("page_id, title, text"), [lang])
        ids = np.array([page_id for page_id, _, _ in rows], dtype=np.int64)
        texts = ModelTexts(rows, lang)
        pool = self.model.start_multi_process_pool(list(self.placement.pool)) if self.placement.pool else None
        try:
            vectors = encode_corpus(lambda chunk: self.encode(chunk, pool), ids, texts, cache,
                                    label=f"encoding {lang} ({self.placement.device}, {self.placement.precision})")
        finally:
            if pool is not None:
                self.model.stop_multi_process_pool(pool)
                self.model.to(self.placement.device)  # the pool moved the model to the CPU to share it
        log.info("encoded %d %s documents with %s", len(ids), lang, self.model_name)
        return ids, vectors

    def _cache_path(self, wh: Warehouse, lang: str) -> UPath:
        ref = current_ref(wh, "documents", lang)
        if ref is None:
            raise ConfigError(f"no {lang} documents in the warehouse")
        return wh.lake_root / "embeddings" / lang / f"{self.cache_key(ref.fingerprint)}.npz"

    def _search_state(self, wh: Warehouse, lang: str) -> tuple[np.ndarray, np.ndarray, Any]:
        """(ids, vectors, what is searched: the vectors on the device, or a FAISS index), once per language."""
        if lang not in self._searchable:
            self._searchable.clear()  # one language's vectors at a time, as many as a search needs
            ids, vectors = self.document_vectors(wh, lang)
            if self.index == "exact" or not len(ids):
                target = to_device(vectors, self.placement.device)
            else:
                path = self._cache_path(wh, lang)
                stored = vector_index.load_or_build(path.with_name(f"{path.stem}.{self.index}.faiss"), self.index, vectors)
                target = vector_index.on_device(stored, self.placement.device)
            self._searchable[lang] = ids, vectors, target
        return self._searchable[lang]

    def searched_vectors(self, wh: Warehouse, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """(doc ids, vectors) of a language as :meth:`search` holds them: loaded once for both."""
        ids, vectors, _ = self._search_state(wh, lang)
        return ids, vectors

    def search(self, wh: Warehouse, lang: str, query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Each query's top ``k`` among ``lang``'s documents, through the configured index."""
        ids, vectors, target = self._search_state(wh, lang)
        if self.index == "exact" or not len(ids):
            return top_k(query_vectors, target, ids, k)
        hits = vector_index.search(target, self.index, query_vectors, vectors, ids, k)
        if self.index in vector_index.APPROXIMATE:
            sample, depth = query_vectors[:RECALL_SAMPLE], min(k, 100)
            recall = vector_index.recall_at(hits[:RECALL_SAMPLE], top_k(sample, vectors, ids, depth), depth)
            log.info("%s over %s: recall@%d against exact %.4f (%d queries)", self.name, lang, depth, recall, len(sample))
        return hits

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        ids, _, _ = self._search_state(wh, tgt)
        if not len(ids) or not queries:
            return {query_id: [] for query_id, _ in queries}
        hits = self.search(wh, tgt, self.encode([text for _, text in queries]), k)
        return {query_id: result for (query_id, _), result in zip(queries, hits, strict=True)}
