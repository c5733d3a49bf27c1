"""An index over one language's articles of the warehouse: which documents are indexed, and where the index stage
keeps what it built."""

from __future__ import annotations

from pathlib import Path

from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse


def articles_sql(columns: str) -> str:
    """A query over one language's articles (``?`` = lang): no redirects, no disambiguation pages."""
    return (f"SELECT {columns} FROM documents WHERE lang = ? AND NOT is_redirect AND NOT is_disambiguation"
            " AND page_id IS NOT NULL ORDER BY page_id")


def index_path(home: Path, backend: str, lang: str, fingerprint: str) -> Path:
    """Where the index stage run with ``fingerprint`` keeps its index (or, for a remote engine, its reference)."""
    return home / "indexes" / backend / lang / fingerprint[:16]


def build_index(wh: Warehouse, lang: str, backend: str, config: IndexConfig, fingerprint: str) -> StageOutput:
    """Index one language's articles (redirects and disambiguation pages are not documents)."""
    path = index_path(wh.home, backend, lang, fingerprint)
    rows = wh.query(articles_sql("page_id, title, text"), [lang])
    info = get_backend(backend).build(lang, rows, path, config)
    return StageOutput(rows=info.doc_count)
