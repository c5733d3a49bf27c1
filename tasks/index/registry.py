"""Index backends by name, imported only when asked for.

The Elasticsearch client (and the embedded engine's tantivy and bm25s) load
only in a process that uses them, so a laptop run never needs a cluster's
client and a cluster run never loads the embedded engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from tasks.errors import ConfigError
from tasks.index.base import SearchIndex

# name -> "module:class"
BACKENDS: dict[str, str] = {
    "tantivy": "tasks.index.embedded:TantivyIndex",
    "elasticsearch": "tasks.index.elastic:ElasticIndex",
}
DEFAULT_BACKEND = "tantivy"


def get_backend(name: str = DEFAULT_BACKEND, **options: Any) -> SearchIndex:
    """A new backend instance; ``options`` go to its constructor (e.g. ``url=`` for Elasticsearch)."""
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ConfigError(f"unknown index backend {name!r} (known: {', '.join(sorted(BACKENDS))})") from None
    module_name, class_name = target.split(":")
    backend: SearchIndex = getattr(import_module(module_name), class_name)(**options)
    return backend
