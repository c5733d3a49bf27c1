"""What every ranker provides, and how one is chosen by a spec string."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tasks.errors import ConfigError
from tasks.placement import Placement, log_placement
from tasks.warehouse.db import Warehouse

Query = tuple[int, str]  # (query id, query text)
Ranking = dict[int, list[tuple[int, float]]]  # query id → [(doc id, score)] best first

DEFAULT_DENSE_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


class Ranker(Protocol):
    """Ranks target-language documents for source-language queries."""

    name: str

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        ...


def make_ranker(spec: str, placement: Placement, *, backend: str = "tantivy") -> Ranker:
    """``bm25`` or ``dense`` / ``dense:MODEL`` (a hub name or a local sentence-transformers directory), searched
    exactly; ``dense@INDEX:MODEL`` searches through a FAISS index (flat: exact; ivf, hnsw: approximate).
    ``placement`` is where a dense model runs."""
    kind, _, model = spec.partition(":")
    if kind == "bm25":
        from tasks.rankers.bm25 import Bm25Ranker

        return Bm25Ranker(backend)
    name, _, index = kind.partition("@")
    if name == "dense":
        from tasks.rankers.dense import DenseRanker

        return DenseRanker(model or DEFAULT_DENSE_MODEL, placement=placement, index=index or "exact")
    raise ConfigError(f"unknown ranker {spec!r}: use bm25, dense, dense:MODEL or dense@INDEX:MODEL (INDEX: exact, flat,"
                      " ivf, hnsw)")


def log_model_placement(spec: str, rerank: str | None, placement: Placement) -> None:
    """Where the ranker's models ran (device kind, precision), as MLflow parameters; bm25 alone runs none."""
    if spec.startswith("dense") or rerank:
        log_placement(placement)
