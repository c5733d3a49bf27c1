"""Bounded-memory exact search, the FAISS index and resumable corpus encoding (tasks.rankers)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from upath import UPath

from tasks.placement import Placement
from tasks.rankers import vector_index
from tasks.rankers.embedding_cache import encode_corpus, load_npz, parts_dir
from tasks.rankers.search import block_rows, top_k
from tests.support.tiny_models import build_bi_encoder


def _tied_vectors(rng: np.random.Generator, n: int, dim: int = 4) -> np.ndarray:
    """Small whole numbers: float32 sums of their products are exact, and many scores tie."""
    return rng.integers(-2, 3, size=(n, dim)).astype(np.float32)


def _brute_force(queries: np.ndarray, docs: np.ndarray, ids: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """Every document of every query sorted by (-score, doc id), scores in exact integer arithmetic."""
    scores = queries.astype(np.int64) @ docs.astype(np.int64).T
    return [[(int(ids[j]), float(row[j])) for j in sorted(range(len(ids)), key=lambda j: (-row[j], ids[j]))[:k]]
            for row in scores]


def test_a_tie_is_broken_by_doc_id_even_across_the_k_th_place() -> None:
    # query [1, 0] scores the documents 0.5, 0.5, 0.9, 0.1: the top 2 is doc 20 (0.9), then of the two 0.5s the
    # lower id, 10 — whichever of them argpartition happened to keep
    docs = np.array([[0.5, 0], [0.5, 0], [0.9, 0], [0.1, 0]], dtype=np.float32)
    ids = np.array([30, 10, 20, 40])
    for block in (1, 4):
        assert top_k(np.array([[1.0, 0.0]], dtype=np.float32), docs, ids, 2, block=block) == [[
            (20, pytest.approx(0.9)), (10, 0.5)]]


@pytest.mark.parametrize("k", [1, 7, 100, 600])
def test_block_search_equals_brute_force_whatever_the_block(k: int) -> None:
    rng = np.random.default_rng(1)
    docs, queries = _tied_vectors(rng, 500), _tied_vectors(rng, 37)
    ids = rng.permutation(10_000)[:500]  # ids not in row order, so a tie's winner is not simply the first row
    expected = _brute_force(queries, docs, ids, k)
    for block in (1, 5, 37, None):
        assert top_k(queries, docs, ids, k, block=block) == expected, block


def test_blocks_rank_as_one_product_over_all_queries_up_to_float_rounding() -> None:
    # what dense search computed before blocks: one (queries × documents) product, then each row sorted.  BLAS
    # picks its kernel by the matrix's shape, and on some CPUs (OpenBLAS's dynamic dispatch) a block of a few rows
    # sums in another order than the whole product: scores may differ by float32 rounding (~1e-7), never more,
    # and only documents that close may trade places
    rng = np.random.default_rng(6)
    docs = rng.standard_normal((3000, 32), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.standard_normal((101, 32), dtype=np.float32)
    ids = np.arange(3000)
    whole = queries @ docs.T
    for block in (1, 2, 50, 100, None):  # 1 and 100 leave one-query blocks, scored beside a copy of themselves
        for row, hits in zip(whole, top_k(queries, docs, ids, 10, block=block), strict=True):
            best = np.sort(row)[::-1][:10]
            assert [score for _, score in hits] == pytest.approx(best, abs=1e-6), block
            assert all(abs(row[doc] - score) <= 1e-6 for doc, score in hits), block


def test_torch_vectors_are_searched_by_torch_with_the_same_result() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    docs, queries = _tied_vectors(rng, 300), _tied_vectors(rng, 20)
    ids = rng.permutation(300)
    assert top_k(queries, torch.from_numpy(docs), ids, 10, block=6) == _brute_force(queries, docs, ids, 10)


def test_block_search_memory_is_bounded_by_the_block() -> None:
    rng = np.random.default_rng(3)
    docs = rng.standard_normal((5000, 8), dtype=np.float32)
    queries = rng.standard_normal((2000, 8), dtype=np.float32)
    ids = np.arange(5000)
    tracemalloc.start()
    top_k(queries, docs, ids, 10, block=50)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the full score matrix alone would be 2000 × 5000 × 4 B = 40 MB; a block's is 50 × 5000 × 4 B = 1 MB, one
    # query's negated scores 20 kB and argpartition positions (int64) 40 kB, the 20,000 (id, score) results a
    # few MB
    assert peak < 8 * 2**20, peak
    assert block_rows(1_000_000) * 1_000_000 * 4 <= 256 * 2**20


def test_faiss_flat_equals_brute_force_ties_included() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(4)
    docs, queries = _tied_vectors(rng, 400), _tied_vectors(rng, 30)
    ids = rng.permutation(400) * 3
    index = vector_index.build("flat", docs)
    found = vector_index.search(index, "flat", queries, docs, ids, 25)
    assert found == _brute_force(queries, docs, ids, 25)


def test_an_approximate_index_is_measured_against_exact() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    docs = rng.standard_normal((3000, 16), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[:50] + 0.1 * rng.standard_normal((50, 16), dtype=np.float32)
    ids = np.arange(3000)
    exact = top_k(queries, docs, ids, 100)
    for kind in ("hnsw", "ivf"):
        approximate = vector_index.search(vector_index.build(kind, docs), kind, queries, docs, ids, 100)
        assert 0.5 < vector_index.recall_at(approximate, exact, 100) <= 1.0, kind
    # recall by hand: the approximate top 2 found one of the exact top 2 (doc 1), for the one query
    assert vector_index.recall_at([[(1, 0.9), (2, 0.8)]], [[(1, 0.9), (3, 0.85)]], 2) == 0.5


def test_the_index_is_stored_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("faiss")
    docs = np.eye(8, dtype=np.float32)
    path = UPath(tmp_path / "embeddings" / "de" / "key.flat.faiss")
    built = vector_index.load_or_build(path, "flat", docs)
    assert path.exists() and built.ntotal == 8
    monkeypatch.setattr(vector_index, "build", lambda *_: pytest.fail("built again instead of read"))
    assert vector_index.load_or_build(path, "flat", docs).ntotal == 8


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 (a SentenceTransformer)
    from tasks.placement import load_bi_encoder

    texts = [f"article number {i} about rivers and towns" for i in range(40)]
    return load_bi_encoder(str(build_bi_encoder(texts, tmp_path_factory.mktemp("model"))), Placement("cpu", "fp32"))


class CrashAfter:
    """Fault injection: encodes with the real model, then dies at its ``calls``-th call, like a killed process."""

    def __init__(self, model, calls: int | None = None) -> None:  # noqa: ANN001
        self.model, self.calls, self.encoded = model, calls, 0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if self.calls is not None and self.calls == 0:
            raise KeyboardInterrupt("killed")
        if self.calls is not None:
            self.calls -= 1
        self.encoded += len(texts)
        return self.model.encode(list(texts), normalize_embeddings=True)


def test_an_interrupted_encoding_resumes_at_its_last_shard(encoder, tmp_path: Path) -> None:  # noqa: ANN001
    texts = [f"article number {i} about rivers" for i in range(23)]
    ids = np.arange(100, 123)
    cache = UPath(tmp_path / "de" / "key.npz")
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(CrashAfter(encoder, calls=2), ids, texts, cache, shard_docs=5)  # shards 0 and 1 written
    assert not cache.exists()
    assert sorted(p.name for p in parts_dir(cache).iterdir() if p.suffix == ".npz") == ["000000.npz", "000001.npz"]
    resumed = CrashAfter(encoder)
    vectors = encode_corpus(resumed, ids, texts, cache, shard_docs=5)
    assert resumed.encoded == 23 - 2 * 5  # only the three shards after the last one written
    fresh = encode_corpus(CrashAfter(encoder), ids, texts, UPath(tmp_path / "fresh" / "key.npz"), shard_docs=5)
    np.testing.assert_allclose(vectors, fresh, rtol=0, atol=1e-6)
    stored_ids, stored = load_npz(cache)
    assert np.array_equal(stored_ids, ids) and np.array_equal(stored, vectors)
    assert not parts_dir(cache).exists()  # the parts became the one cache file


def test_a_shard_of_other_documents_is_encoded_again(encoder, tmp_path: Path) -> None:  # noqa: ANN001
    texts = [f"article number {i}" for i in range(8)]
    cache = UPath(tmp_path / "key.npz")
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(CrashAfter(encoder, calls=1), np.arange(8), texts, cache, shard_docs=4)
    counting = CrashAfter(encoder)
    encode_corpus(counting, np.arange(8) + 1000, texts, cache, shard_docs=4)  # the documents changed meanwhile
    assert counting.encoded == 8


def test_the_dense_ranker_searches_through_a_stored_index_with_the_exact_rankings(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    from benchmarks.dense_encoding import add_articles, synthetic_articles
    from tasks.rankers.dense import DenseRanker
    from tasks.warehouse.db import Warehouse

    articles = synthetic_articles(300, (5, 20))
    model = str(build_bi_encoder([f"{title} {text}" for _, title, text in articles], tmp_path))
    queries = [(i, title) for i, (_, title, _) in enumerate(articles[:20])]
    cpu = Placement("cpu", "fp32")
    with Warehouse(tmp_path / "home") as wh:
        add_articles(wh, "de", articles)
        exact = DenseRanker(model, placement=cpu).rank(wh, "en", "de", queries, 10)
        flat = DenseRanker(model, placement=cpu, index="flat").rank(wh, "en", "de", queries, 10)
        # the same documents in the same order; FAISS sums the products in another order, so a score may differ
        # in its last bits
        assert {q: [d for d, _ in hits] for q, hits in flat.items()} == {q: [d for d, _ in hits] for q, hits in exact.items()}
        np.testing.assert_allclose([[s for _, s in flat[q]] for q, _ in queries],
                                   [[s for _, s in exact[q]] for q, _ in queries], rtol=0, atol=1e-6)
        hnsw = DenseRanker(model, placement=cpu, index="hnsw").rank(wh, "en", "de", queries, 10)
        stored = sorted(p.name.split(".", 1)[1] for p in (wh.lake_root / "embeddings" / "de").iterdir())
        assert stored == ["flat.faiss", "hnsw.faiss", "npz"]  # beside the embedding cache, one per index kind
        mtimes = {p.name: p.stat().st_mtime_ns for p in (wh.lake_root / "embeddings" / "de").iterdir()}
        assert DenseRanker(model, placement=cpu, index="hnsw").rank(wh, "en", "de", queries, 10) == hnsw
        assert {p.name: p.stat().st_mtime_ns for p in (wh.lake_root / "embeddings" / "de").iterdir()} == mtimes
    assert [len(hits) for hits in exact.values()] == [10] * 20


def test_texts_are_prepared_step_by_step_and_encoded_as_a_whole_would_be(encoder, tmp_path: Path,  # noqa: ANN001
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.rankers import embedding_cache
    from tasks.rankers.dense import ModelTexts

    rows = [(i, f"Title {i}", f"text of article {i} " * (i % 5 + 1)) for i in range(11)]
    texts = ModelTexts(rows, "en")
    assert texts[2:4] == ["Title 2\ntext of article 2 text of article 2 text of article 2 ",
                          "Title 3\n" + "text of article 3 " * 4]  # a whitespace language's text under its limit is whole
    monkeypatch.setattr(embedding_cache, "PREPARE_DOCS", 3)  # 4 steps in the first shard of 10, 1 in the second
    steps = CrashAfter(encoder)
    vectors = encode_corpus(steps, np.arange(11), texts, UPath(tmp_path / "key.npz"), shard_docs=10)
    whole = encoder.encode([texts[i] for i in range(11)], normalize_embeddings=True)
    np.testing.assert_allclose(vectors, whole, rtol=0, atol=1e-6)
    assert steps.encoded == 11
