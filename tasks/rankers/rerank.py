"""Cross-encoder re-scoring of a first-stage ranking's top K (sentence-transformers CrossEncoder)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from tasks.placement import Placement, batch_size, load_cross_encoder
from tasks.rankers.base import Query, Ranker, Ranking
from tasks.text.truncate import truncate
from tasks.warehouse.db import Warehouse


class Reranker:
    """Wraps a first-stage ranker; documents it did not return keep no score."""

    def __init__(self, first: Ranker, model: str, placement: Placement, depth: int = 100) -> None:
        self.first, self.model_name, self.depth = first, model, depth
        self.placement = placement
        self.name = f"{first.name}>>rerank:{model}"

    @cached_property
    def model(self) -> Any:
        return load_cross_encoder(self.model_name, self.placement)

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        first = self.first.rank(wh, src, tgt, queries, max(k, self.depth))
        doc_ids = sorted({doc for hits in first.values() for doc, _ in hits[: self.depth]})
        texts = dict(wh.query(
            "SELECT page_id, title || chr(10) || coalesce(text, '') FROM documents WHERE lang = ? AND page_id IN"
            " (SELECT unnest(?))", [tgt, doc_ids])) if doc_ids else {}
        batch = batch_size(self.model, self.placement, "cross")
        reranked: Ranking = {}
        for query_id, text in queries:
            candidates = [doc for doc, _ in first.get(query_id, [])[: self.depth]]
            if not candidates:
                reranked[query_id] = []
                continue
            scores = self.model.predict([(text, truncate(texts[doc], tgt)) for doc in candidates], batch_size=batch,
                                        show_progress_bar=False)
            order = sorted(zip(candidates, map(float, scores)), key=lambda pair: (-pair[1], pair[0]))
            reranked[query_id] = order[:k]
        return reranked
