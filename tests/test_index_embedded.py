"""What only the embedded backend has: its on-disk format and how it splits a batch of queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.index import embedded
from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend

CONFIG = IndexConfig(stem=False)


def test_how_a_batch_is_split_never_changes_the_hits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    words = ["amber", "basalt", "cobalt", "dune", "ember", "flint"]
    docs = [(100 + i, f"{words[i % 6]} {words[(i + 1) % 6]}", " ".join(words[j % 6] for j in range(i, i + 3 + i % 4)))
            for i in range(24)]
    queries = [*words, "amber flint", "dune dune", "nothing here", ""]
    backend = get_backend("tantivy")
    info = backend.build("en", docs, tmp_path / "index", CONFIG)
    whole = backend.search(info, "en", queries, 5, CONFIG)
    assert all(whole[:6]) and whole[-2:] == [[], []]
    # Products of three queries; then a postings budget that every query with a word exceeds alone.
    monkeypatch.setattr(embedded, "SEARCH_CHUNK", 3)
    assert backend.search(info, "en", queries, 5, CONFIG) == whole
    monkeypatch.undo()
    monkeypatch.setattr(embedded, "CHUNK_POSTINGS", 4)
    assert [len(chunk) for chunk in embedded._chunks([9, 9, 0, 0, 9])] == [1, 1, 2, 1]
    assert backend.search(info, "en", queries, 5, CONFIG) == whole


def test_an_index_without_score_matrices_asks_for_a_rebuild(tmp_path: Path) -> None:
    # An index directory from before the backend scored with bm25s has a manifest but no matrices.
    backend = get_backend("tantivy")
    info = backend.build("en", [(1, "Quartz", "a hard mineral")], tmp_path / "index", CONFIG)
    (info.path / embedded.DOC_IDS_FILE).unlink()
    with pytest.raises(ConfigError, match="no BM25 score matrices.*rebuild"):
        backend.search(info, "en", ["quartz"], 10, CONFIG)
