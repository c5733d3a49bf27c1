"""What only the embedded backend has: its on-disk format and how it splits a batch of queries."""

from __future__ import annotations

import threading
from collections.abc import Iterator
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
    # Chunks of three queries; then documents summed in blocks of one, five and seven (the index holds 24).
    monkeypatch.setattr(embedded, "SEARCH_CHUNK", 3)
    assert backend.search(info, "en", queries, 5, CONFIG) == whole
    monkeypatch.undo()
    for block in (1, 5, 7):
        monkeypatch.setattr(embedded, "DOCUMENT_BLOCK", block)
        assert backend.search(info, "en", queries, 5, CONFIG) == whole


def test_two_builds_in_one_process_run_one_after_the_other(tmp_path: Path) -> None:
    """A flow indexes its languages on parallel threads; each build uses every core already, so a second build at
    once would only hold a second corpus in memory. The first reader waits (up to a second) for the second to
    begin: had the builds overlapped, the second would have begun while the first was still reading."""
    reading: set[str] = set()
    began: list[str] = []
    overlapped: list[str] = []
    second_began = threading.Event()

    def docs(lang: str, word: str) -> Iterator[tuple[int, str, str]]:
        if reading:
            overlapped.append(lang)
        reading.add(lang)
        began.append(lang)
        if len(began) == 2:
            second_began.set()
        for page_id in range(1, 4):
            yield page_id, f"{word} {page_id}", f"{word} text"
            if page_id == 1:
                second_began.wait(timeout=1.0)
        reading.discard(lang)

    backend = get_backend("tantivy")
    built = {}

    def build(lang: str, word: str) -> None:
        built[lang] = backend.build(lang, docs(lang, word), tmp_path / lang / "index", CONFIG)  # as index_path

    threads = [threading.Thread(target=build, args=args) for args in (("en", "quartz"), ("de", "feldspat"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not overlapped, f"{overlapped[0]} began reading its documents while another build was reading"
    assert [hits[0][0] for hits in backend.search(built["en"], "en", ["quartz 2"], 1, CONFIG)] == [2]
    assert [hits[0][0] for hits in backend.search(built["de"], "de", ["feldspat 3"], 1, CONFIG)] == [3]


@pytest.mark.parametrize(("missing", "message"), [
    # from before the backend scored with bm25s: a manifest but no matrices
    (embedded.DOC_IDS_FILE, "no BM25 score matrices.*rebuild"),
    # format 1: a bm25s model per field, no layout of one stacked matrix
    (embedded.LAYOUT_FILE, "a bm25s model per field.*rebuild"),
])
def test_an_index_of_an_earlier_format_asks_for_a_rebuild(tmp_path: Path, missing: str, message: str) -> None:
    from tasks.catalog import INDEX

    backend = get_backend("tantivy")
    info = backend.build("en", [(1, "Quartz", "a hard mineral")], tmp_path / "index", CONFIG)
    (info.path / missing).unlink()
    with pytest.raises(ConfigError, match=message):
        backend.search(info, "en", ["quartz"], 10, CONFIG)
    assert INDEX.version >= 3  # the index stage's version 3 writes format 2: its cached earlier indexes are rebuilt


def test_field_scores_are_bm25s_lucene_scores_to_the_bit() -> None:
    # The vectorised scoring must give the matrix bm25s's own indexing gives (N and
    # mean length over the documents that have the field), so no ranking or score moves.
    # Ten blocks of texts go through the build's path: pieces, their words, counts per block, placed a few at once.
    from concurrent.futures import ThreadPoolExecutor

    import bm25s
    import numpy as np
    import pyarrow as pa
    import tantivy
    from scipy.sparse import csr_array

    rng = np.random.default_rng(7)
    docs = [[] if row % 5 == 2 else [f"w{int(x)}" for x in rng.zipf(1.4, size=int(rng.integers(1, 40))) if x < 900]
            for row in range(600)]
    words = embedded._FieldWords()
    analyzer = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    with ThreadPoolExecutor(max_workers=2) as pool:
        for start in range(0, len(docs), 60):
            texts = [" ".join(doc) for doc in docs[start:start + 60]]
            words.add_texts(embedded._SplitTexts.of(pa.array(texts, pa.large_string())), analyzer, pool)
        ours = words.scores(CONFIG)
    rows = [row for row, doc in enumerate(docs) if doc]
    listed = [[words.vocabulary[word] for word in docs[row]] for row in rows]
    model = bm25s.BM25(k1=CONFIG.k1, b=CONFIG.b, method="lucene")
    model.index((listed, dict(words.vocabulary)), create_empty_token=False, show_progress=False)
    theirs = csr_array((model.scores["data"], np.array(rows)[model.scores["indices"]], model.scores["indptr"]),
                       shape=ours.shape)
    assert ours.shape == (len(words.vocabulary), len(docs))
    assert np.array_equal(ours.indptr, theirs.indptr) and np.array_equal(ours.indices, theirs.indices)
    assert ours.data.dtype == np.float32 and np.array_equal(ours.data, theirs.data)
