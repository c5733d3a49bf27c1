"""The compiled top-k search against two independent references: a brute-force ranking, and scipy's sparse product
(the embedded engine's scorer before it was compiled), on random matrices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_array, random_array

from tasks.index.top_hits import top_hits


def _search(scores: csr_array, queries: list[list[tuple[int, float]]], doc_ids: np.ndarray, k: int,
            block: int) -> list[list[tuple[int, float]]]:
    starts = np.cumsum([0, *map(len, queries)], dtype=np.int64)
    rows = np.array([row for query in queries for row, _ in query], dtype=np.int64)
    weights = np.array([weight for query in queries for _, weight in query], dtype=np.float32)
    ids, values = np.empty((len(queries), k), dtype=np.int64), np.empty((len(queries), k), dtype=np.float32)
    counts = np.empty(len(queries), dtype=np.int64)
    top_hits(scores.indptr, scores.indices, scores.data, starts, rows, weights, doc_ids, k, block, ids, values, counts)
    return [list(zip(ids[q, :counts[q]].tolist(), values[q, :counts[q]].tolist(), strict=True))
            for q in range(len(queries))]


def _random_case(rng: np.random.Generator, values: np.ndarray | None) -> tuple[csr_array, np.ndarray,
                                                                                list[list[tuple[int, float]]]]:
    """A (row × document) matrix, doc ids in no particular order, and queries of repeated and missing rows."""
    rows, documents = int(rng.integers(1, 12)), int(rng.integers(1, 60))
    matrix = random_array((rows, documents), density=float(rng.uniform(0.05, 0.9)), format="csr", dtype=np.float32,
                          rng=rng)
    if values is not None:  # few distinct values: many ties, sums exact in float32
        matrix.data = rng.choice(values, size=matrix.nnz).astype(np.float32)
    matrix.sort_indices()  # an index keeps each row's documents in index order
    doc_ids = rng.permutation(np.arange(documents, dtype=np.int64) * 7 + 1000)
    queries = [[(int(rng.integers(rows)), float(rng.choice([0.5, 1.0, 2.0]))) for _ in range(rng.integers(0, 6))]
               for _ in range(rng.integers(1, 8))]
    return matrix, doc_ids, queries


@pytest.mark.parametrize("seed", range(40))
def test_the_top_k_is_the_brute_force_ranking_by_score_then_doc_id(seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix, doc_ids, queries = _random_case(rng, np.array([0.25, 0.5, 0.75, 1.0, 1.5]))
    dense = matrix.toarray()
    k = int(rng.integers(1, matrix.shape[1] + 3))
    expected = []
    for query in queries:
        totals: dict[int, float] = {}
        for row, weight in query:
            for position in np.flatnonzero(dense[row]).tolist():
                totals[position] = totals.get(position, 0.0) + weight * float(dense[row, position])
        ranked = sorted(((int(doc_ids[position]), total) for position, total in totals.items()),
                        key=lambda hit: (-hit[1], hit[0]))
        expected.append(ranked[:k])
    for block in (1, 2, 3, 7, 1 << 17):
        assert _search(matrix, queries, doc_ids, k, block) == expected, f"block {block}"


@pytest.mark.parametrize("seed", range(20))
def test_scores_are_scipys_sparse_product_to_the_bit(seed: int) -> None:
    """Adding the rows in the query's order in float32, as scipy's product does: the same scores, last bit
    included, so the engine's rankings did not move when it stopped using scipy."""
    rng = np.random.default_rng(1000 + seed)
    matrix, doc_ids, queries = _random_case(rng, None)
    query_matrix = csr_array((np.array([w for q in queries for _, w in q], dtype=np.float32),
                              np.array([r for q in queries for r, _ in q], dtype=np.int64),
                              np.cumsum([0, *map(len, queries)])), shape=(len(queries), matrix.shape[0]))
    product = (query_matrix @ matrix).tocsr()
    found = _search(matrix, queries, doc_ids, matrix.shape[1], 3)
    for q, hits in enumerate(found):
        row = product[[q]]
        assert sorted(hits) == sorted(zip(doc_ids[row.indices].tolist(), row.data.tolist(), strict=True))
