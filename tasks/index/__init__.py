"""The index stage: per-language BM25 indexes behind one interface (embedded on disk, Elasticsearch at scale).

Backends come from :func:`tasks.index.registry.get_backend` so their heavy
dependencies load only when used.
"""

from tasks.index.base import DocumentRow, Hit, IndexConfig, IndexInfo, SearchIndex
from tasks.index.registry import get_backend

__all__ = ["DocumentRow", "Hit", "IndexConfig", "IndexInfo", "SearchIndex", "get_backend"]
