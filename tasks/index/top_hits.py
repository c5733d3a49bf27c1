"""Each query's top k documents from a (word × document) score matrix, compiled by Numba.

A query is a weighted set of the matrix's rows (its words in each field); a document's score is the sum of its
entries in those rows times their weights, in float32, row after row in the query's order (as scipy's sparse
product adds them, so the scores do not change with the engine). One pass over the query's postings adds them up
and one pass over the documents it matched keeps the best ``k`` in a heap.

Why compiled, and by blocks of documents: at a million documents a query reads ~22,000 postings, and scipy's
product (two passes, accumulators as long as the collection, touched at random) spent ~22 ns on each, plus a
partition and a sort per query in NumPy. Here the query's rows are walked together one block of ``block``
documents at a time (each row's documents are in index order, so a cursor per row carries over from block to
block): a block's accumulators stay in a core's cache. ``benchmarks/mining_phases.py`` measures the phases.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, inline="always")
def _worse(score: float, doc_id: int, other_score: float, other_id: int) -> bool:
    """The ranking's order: a lower score is worse, and of equal scores the higher doc_id."""
    return score < other_score or (score == other_score and doc_id > other_id)


@numba.njit(nogil=True, cache=True, inline="always")
def _sift_down(scores: np.ndarray, ids: np.ndarray, size: int, position: int) -> None:
    """Restore the heap (worst hit at the root) below ``position``."""
    score, doc_id = scores[position], ids[position]
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and _worse(scores[child + 1], ids[child + 1], scores[child], ids[child]):
            child += 1
        if not _worse(scores[child], ids[child], score, doc_id):
            break
        scores[position], ids[position] = scores[child], ids[child]
        position = child
    scores[position], ids[position] = score, doc_id


@numba.njit(nogil=True, cache=True, inline="always")
def _push(scores: np.ndarray, ids: np.ndarray, size: int, score: float, doc_id: int) -> None:
    """Add a hit to a heap of ``size`` hits with room for one more."""
    position = size
    while position > 0:
        parent = (position - 1) // 2
        if not _worse(score, doc_id, scores[parent], ids[parent]):
            break
        scores[position], ids[position] = scores[parent], ids[parent]
        position = parent
    scores[position], ids[position] = score, doc_id


@numba.njit(nogil=True, cache=True)
def top_hits(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, query_starts: np.ndarray,
             query_rows: np.ndarray, query_weights: np.ndarray, doc_ids: np.ndarray, k: int, block: int,
             out_ids: np.ndarray, out_scores: np.ndarray, out_counts: np.ndarray) -> None:
    """Fill ``out_ids``/``out_scores`` (queries × k) with each query's best hits, best first, and ``out_counts``.

    The matrix is CSR (``indptr``, ``indices``: document positions in index order within a row, ``data``); query
    ``q`` is the rows ``query_rows[query_starts[q]:query_starts[q + 1]]`` with their weights. Hits are ordered by
    score, then by ``doc_ids`` (the documents' ids), so equal scores at the cut keep the lowest ids, whatever the
    blocks.
    """
    documents = doc_ids.shape[0]
    width = min(block, documents)
    sums = np.empty(width, np.float32)
    seen = np.zeros(width, np.int32)  # which block pass last wrote each slot: no clearing between passes
    touched = np.empty(width, np.int32)
    cursors = np.empty(query_rows.shape[0], np.int64)
    heap_scores = np.empty(k, np.float32)
    heap_ids = np.empty(k, np.int64)
    stamp = 0
    for query in range(query_starts.shape[0] - 1):
        first, last = query_starts[query], query_starts[query + 1]
        for entry in range(first, last):
            cursors[entry] = indptr[query_rows[entry]]
        size = 0
        for low in range(0, documents, block):
            high = low + block
            stamp += 1
            matched = 0
            for entry in range(first, last):
                weight = query_weights[entry]
                position, end = cursors[entry], indptr[query_rows[entry] + 1]
                while position < end and indices[position] < high:
                    slot = indices[position] - low
                    if seen[slot] != stamp:
                        seen[slot] = stamp
                        sums[slot] = weight * data[position]
                        touched[matched] = slot
                        matched += 1
                    else:
                        sums[slot] += weight * data[position]
                    position += 1
                cursors[entry] = position
            for hit in range(matched):
                slot = touched[hit]
                score = sums[slot]
                if size < k:
                    _push(heap_scores, heap_ids, size, score, doc_ids[low + slot])
                    size += 1
                elif score >= heap_scores[0] and _worse(heap_scores[0], heap_ids[0], score, doc_ids[low + slot]):
                    heap_scores[0], heap_ids[0] = score, doc_ids[low + slot]
                    _sift_down(heap_scores, heap_ids, size, 0)
        out_counts[query] = size
        while size > 0:  # the worst hit leaves the heap first: written from the end
            size -= 1
            out_scores[query, size], out_ids[query, size] = heap_scores[0], heap_ids[0]
            heap_scores[0], heap_ids[0] = heap_scores[size], heap_ids[size]
            _sift_down(heap_scores, heap_ids, size, 0)
