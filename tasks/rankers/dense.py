"""Dense bi-encoder retrieval with sentence-transformers; document embeddings cached in the lake.

Document vectors are keyed by (model, language, the documents' fingerprint),
so a second evaluation with the same model and corpus encodes only queries.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
from upath import UPath

from tasks.errors import ConfigError
from tasks.pairing.mining import articles_sql
from tasks.rankers.base import Query, Ranking
from tasks.stage import current_ref
from tasks.text.truncate import truncate
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import write_atomic

log = logging.getLogger(__name__)


def top_k(query_vectors: np.ndarray, doc_vectors: np.ndarray, doc_ids: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """Cosine top-k per query (vectors are normalised), ties broken by doc id for determinism."""
    scores = query_vectors @ doc_vectors.T
    k = min(k, len(doc_ids))
    results = []
    for row in scores:
        candidates = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
        order = sorted(candidates, key=lambda i: (-row[i], doc_ids[i]))
        results.append([(int(doc_ids[i]), float(row[i])) for i in order])
    return results


class DenseRanker:
    def __init__(self, model: str) -> None:
        self.model_name = model
        self.name = f"dense:{model}"

    @cached_property
    def model(self) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.model_name, device="cpu")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``; queries and cached documents go through this same path, so they compare."""
        return np.asarray(self.model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                            show_progress_bar=len(texts) > 1000), dtype=np.float32)

    def document_vectors(self, wh: Warehouse, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """(doc ids, vectors) of one language's articles, from the lake cache or freshly encoded."""
        ref = current_ref(wh, "documents", lang)
        if ref is None:
            raise ConfigError(f"no {lang} documents in the warehouse")
        key = hashlib.sha256(f"{self.model_name}|{ref.fingerprint}".encode()).hexdigest()[:16]
        cache = wh.lake_root / "embeddings" / lang / f"{key}.npz"
        if cache.exists():
            with cache.open("rb") as handle, np.load(handle) as cached:
                return cached["ids"], cached["vectors"]
        rows = wh.query(articles_sql("page_id, title, text"), [lang])
        ids = np.array([page_id for page_id, _, _ in rows], dtype=np.int64)
        vectors = self.encode([f"{title}\n{truncate(text or '', lang)}" for _, title, text in rows])
        _save_npz_atomic(cache, ids=ids, vectors=vectors)
        log.info("encoded %d %s documents with %s", len(ids), lang, self.model_name)
        return ids, vectors

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        ids, vectors = self.document_vectors(wh, tgt)
        if not len(ids) or not queries:
            return {query_id: [] for query_id, _ in queries}
        hits = top_k(self.encode([text for _, text in queries]), vectors, ids, k)
        return {query_id: result for (query_id, _), result in zip(queries, hits, strict=True)}


def _save_npz_atomic(path: UPath, **arrays: np.ndarray) -> None:
    """Write the arrays to ``path`` on the lake's filesystem, appearing only when complete (another process may
    read the cache)."""
    def savez(tmp: UPath) -> None:
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)

    write_atomic(path, savez)
