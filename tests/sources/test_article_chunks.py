"""Reading a language's articles a chunk of page ids at a time gives exactly what one ordered query gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tasks.index.corpus import Articles, articles_sql
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump


@pytest.fixture
def wh(home: Path) -> Warehouse:
    """Two languages sharing page ids; each dump's pages written out of page-id order, with redirects among them."""
    warehouse = Warehouse(home)
    rng = random.Random(7)
    for lang in ("en", "de"):
        ids = rng.sample(range(1, 400), 61)
        pages = [(page_id, f"{lang} {page_id}", f"{lang} 1" if page_id % 5 == 0 else None, f"Q{page_id}",
                  f"text {lang} {page_id}") for page_id in ids]
        ingest_dump(warehouse, lang, "20260101", pages)
    return warehouse


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 48, 1000])
def test_chunks_read_every_article_once_in_page_id_order(wh: Warehouse, chunk: int) -> None:
    for lang in ("en", "de"):
        whole = wh.query(articles_sql("page_id, title, text"), [lang])
        chunked = Articles(wh, lang, "page_id, title, text", chunk=chunk)
        assert list(chunked) == whole
        assert len(chunked) == len(whole)
        assert all(title.startswith(lang) for _, title, _ in whole)  # the other language's same ids stay out
        assert len(chunked.ranges) == -(-len(whole) // chunk)


def test_a_query_around_each_chunk_names_the_language(wh: Warehouse) -> None:
    expected = wh.query(
        f"SELECT a.page_id, length(a.text), s.n FROM ({articles_sql('page_id, text')}) a"
        " CROSS JOIN (SELECT count(*) AS n FROM documents WHERE lang = ?) s ORDER BY a.page_id", ["de", "de"])
    rows = Articles(wh, "de", "page_id, text", chunk=5, around=(
        "SELECT a.page_id, length(a.text), s.n FROM ({articles}) a"
        " CROSS JOIN (SELECT count(*) AS n FROM documents WHERE lang = $lang) s ORDER BY a.page_id"))
    assert list(rows) == expected
    assert {n for _, _, n in expected} == {61}
