"""What every ranker provides, and how one is chosen by a spec string (``NAME[@INDEX][:MODEL]``, NAME registered)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tasks.placement import Placement, log_placement
from tasks.plugins import Kind, register_lazy
from tasks.warehouse.db import Warehouse

Query = tuple[int, str]  # (query id, query text)
Ranking = dict[int, list[tuple[int, float]]]  # query id → [(doc id, score)] best first

DEFAULT_DENSE_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


class Ranker(Protocol):
    """Ranks target-language documents for source-language queries."""

    name: str

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        ...


@dataclass(frozen=True)
class RankerSpec:
    """A ranker spec string, ``NAME[@INDEX][:MODEL]``, in its parts (``index`` and ``model`` empty when not given)."""

    text: str
    name: str
    index: str
    model: str

    @classmethod
    def parse(cls, text: str) -> RankerSpec:
        kind, _, model = text.partition(":")
        name, _, index = kind.partition("@")
        return cls(text, name, index, model)


class RankerPlugin(Protocol):
    """What registers as a ranker: makes one from its spec (usually a ranker class's classmethod)."""

    def from_spec(self, spec: RankerSpec, *, backend: str, placement: Placement) -> Ranker:
        """The ranker ``spec`` asks for; ``backend`` is the index backend a lexical ranker searches, ``placement``
        where a model runs."""
        ...


#: the built-ins are import paths, so torch and FAISS load only when a dense ranker is asked for; another package
#: adds one with an entry point in the group babelbench.ranker
RANKERS: Kind[RankerPlugin] = Kind("ranker", RankerPlugin, "ranker")
register_lazy(RANKERS.name, "bm25", "tasks.rankers.bm25:Bm25Ranker")
register_lazy(RANKERS.name, "dense", "tasks.rankers.dense:DenseRanker")


def make_ranker(spec: str, placement: Placement, *, backend: str = "tantivy") -> Ranker:
    """``bm25`` or ``dense`` / ``dense:MODEL`` (a hub name or a local sentence-transformers directory), searched
    exactly; ``dense@INDEX:MODEL`` searches through a FAISS index (flat: exact; ivf, hnsw: approximate).
    ``placement`` is where a dense model runs."""
    parsed = RankerSpec.parse(spec)
    return RANKERS.get(parsed.name).from_spec(parsed, backend=backend, placement=placement)


def log_model_placement(spec: str, rerank: str | None, placement: Placement) -> None:
    """Where the ranker's models ran (device kind, precision), as MLflow parameters; bm25 alone runs none."""
    if spec.startswith("dense") or rerank:
        log_placement(placement)
