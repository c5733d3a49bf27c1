"""Index backends by name, imported only when asked for.

The Elasticsearch client (and the embedded engine's tantivy) load
only in a process that uses them, so a laptop run never needs a cluster's
client and a cluster run never loads the embedded engine: the built-ins are
registered as import paths (:mod:`tasks.plugins`), and another package adds
a backend with an entry point in the group ``babelbench.index-backend``.
"""

from __future__ import annotations

from typing import Any

from tasks.index.base import SearchIndex
from tasks.plugins import Kind, register_lazy

INDEX_BACKENDS: Kind[type[SearchIndex]] = Kind("index-backend", SearchIndex, "index backend", classes=True)
register_lazy(INDEX_BACKENDS.name, "tantivy", "tasks.index.embedded:TantivyIndex")
register_lazy(INDEX_BACKENDS.name, "elasticsearch", "tasks.index.elastic:ElasticIndex")
DEFAULT_BACKEND = "tantivy"


def get_backend(name: str = DEFAULT_BACKEND, **options: Any) -> SearchIndex:
    """A new backend instance; ``options`` go to its constructor (e.g. ``url=`` for Elasticsearch)."""
    return INDEX_BACKENDS.get(name)(**options)
