"""BM25 over the target language's index, queried with the source-language title as it is.

Cross-lingual BM25 only matches shared strings (names, numbers, cognates): the
lexical floor every learned ranker should beat.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.errors import ConfigError
from tasks.index.base import read_info
from tasks.index.corpus import index_path
from tasks.index.registry import get_backend
from tasks.placement import Placement
from tasks.rankers.base import Query, RankerSpec, Ranking
from tasks.stage import current_ref
from tasks.warehouse.db import Warehouse


class Bm25Ranker:
    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.name = f"bm25:{backend}"

    @classmethod
    def from_spec(cls, spec: RankerSpec, *, backend: str, placement: Placement) -> Bm25Ranker:
        """``bm25`` searches the index ``backend`` built (no model: a ``:MODEL`` part is ignored, as it always was)."""
        if spec.index:
            raise ConfigError(f"ranker {spec.text!r}: bm25 searches the {backend} index, it takes no @INDEX")
        return cls(backend)

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        ref = current_ref(wh, "index", tgt)
        if ref is None:
            raise ConfigError(f"no {tgt} index in the warehouse; run `babelbench clir build` with {tgt} first")
        path = index_path(wh.home, self.backend, tgt, ref.fingerprint)
        info = read_info(path)
        results = get_backend(self.backend).search(path, tgt, [text for _, text in queries], k, info.config)
        return {query_id: hits for (query_id, _), hits in zip(queries, results, strict=True)}
