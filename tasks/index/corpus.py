"""An index over one language's articles of the warehouse: which documents are indexed, how a stage reads them
without holding them all, and where the index stage keeps what it built."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse

#: what makes a document of a language an article (``{lang}``: how the query names the language)
_ARTICLE = "lang = {lang} AND NOT is_redirect AND NOT is_disambiguation AND page_id IS NOT NULL"
#: articles read per query by :class:`Articles`: a chunk of texts in memory at a time (about 3 KB each)
ARTICLE_CHUNK = 10_000


def articles_sql(columns: str) -> str:
    """A query over one language's articles (``?`` = lang): no redirects, no disambiguation pages."""
    return f"SELECT {columns} FROM documents WHERE {_ARTICLE.format(lang='?')} ORDER BY page_id"


class Articles:
    """One language's articles in page-id order, read ``chunk`` articles at a time.

    A query ordering every article's text makes DuckDB hold all of them at once (at a million articles,
    gigabytes). So the chunks' page-id ranges are found first, from the ids alone (:meth:`Warehouse.key_ranges`),
    and each range is read and ordered on its own: a stage holds one chunk. ``around`` is the query run per chunk,
    with ``{articles}`` for the chunk's rows (``columns`` of them); it can name the language as ``$lang``.
    """

    def __init__(self, wh: Warehouse, lang: str, columns: str, *, around: str = "{articles} ORDER BY page_id",
                 chunk: int = ARTICLE_CHUNK) -> None:
        self.wh, self.lang = wh, lang
        self.sql = around.format(articles=f"SELECT {columns} FROM documents WHERE {_ARTICLE.format(lang='$lang')}"
                                          " AND page_id BETWEEN $low AND $high")
        self.ranges = wh.key_ranges(f"SELECT page_id FROM documents WHERE {_ARTICLE.format(lang='$lang')}",
                                    {"lang": lang}, chunk)

    def __len__(self) -> int:
        return sum(count for _, _, count in self.ranges)

    def __iter__(self) -> Iterator[tuple]:
        for low, high, _ in self.ranges:
            for rows in self.wh.batches(self.sql, {"lang": self.lang, "low": low, "high": high}):
                yield from rows


def index_path(home: Path, backend: str, lang: str, fingerprint: str) -> Path:
    """Where the index stage run with ``fingerprint`` keeps its index (or, for a remote engine, its reference)."""
    return home / "indexes" / backend / lang / fingerprint[:16]


def build_index(wh: Warehouse, lang: str, backend: str, config: IndexConfig, fingerprint: str) -> StageOutput:
    """Index one language's articles (redirects and disambiguation pages are not documents)."""
    path = index_path(wh.home, backend, lang, fingerprint)
    info = get_backend(backend).build(lang, Articles(wh, lang, "page_id, title, text"), path, config)
    return StageOutput(rows=info.doc_count)
