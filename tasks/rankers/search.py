"""Exact top-k by inner product in query blocks, so memory is O(block × documents), never queries × documents.

Scoring 5,000 queries against 1 M documents at once needs a 20 GB score
matrix; scored a block of queries at a time, the matrix is capped at
``BLOCK_BYTES``. On the CPU each block is a numpy matmul, then each query's
row an ``argpartition`` (O(documents) more memory); when the document
vectors are a torch tensor (on a GPU) the block is scored and cut to its top
k there, and only k + 1 scores per query come back. Either way
the order is by score, ties broken by ascending doc id, and a tie at the k-th
place is settled the same way (every document scoring the k-th score is
considered).  The block size changes a score by float rounding at most (BLAS
picks its kernel by the matrix's shape), so only documents within ~1e-7 of
each other can trade places.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Hits = list[tuple[int, float]]  # (doc id, score) best first

BLOCK_BYTES = 256 * 2**20
"""Score-matrix bytes per block of queries (256 MiB: ~64 queries against 1 M documents)."""


def block_rows(n_docs: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Queries per block so that a block's float32 scores stay within ``block_bytes``."""
    return max(1, block_bytes // (4 * max(n_docs, 1)))


def _ordered(doc_ids: np.ndarray, candidates: np.ndarray, scores: np.ndarray, k: int) -> Hits:
    """The best ``k`` of ``candidates`` (positions) by (-score, doc id)."""
    order = np.lexsort((doc_ids[candidates], -scores))[:k]
    return [(int(doc_ids[candidates[i]]), float(scores[i])) for i in order]


def _row_top_k(row: np.ndarray, doc_ids: np.ndarray, k: int, part: np.ndarray | None) -> Hits:
    """One query's top ``k``: the argpartition candidates, widened to every document tied with the k-th."""
    if part is None:
        candidates = np.arange(len(row))
    else:
        kth = row[part].min()
        candidates = part if np.count_nonzero(row >= kth) == k else np.flatnonzero(row >= kth)
    return _ordered(doc_ids, candidates, row[candidates], k)


def top_k(query_vectors: np.ndarray, doc_vectors: Any, doc_ids: np.ndarray, k: int,
          *, block: int | None = None) -> list[Hits]:
    """Inner-product top ``k`` of each query (cosine when the vectors are unit length), best first.

    ``doc_vectors`` is a numpy array, or a torch tensor on the device it was moved to (see
    :func:`to_device`); ``block`` overrides the queries scored at once.
    """
    k = min(k, len(doc_ids))
    if k <= 0 or not len(query_vectors):
        return [[] for _ in range(len(query_vectors))]
    if not isinstance(doc_vectors, np.ndarray):
        rows = block or block_rows(len(doc_ids), _gpu_block_bytes(doc_vectors))
        return _torch_top_k(query_vectors, doc_vectors, doc_ids, k, rows)
    rows = block or block_rows(len(doc_ids))
    results: list[Hits] = []
    for start in range(0, len(query_vectors), rows):
        scores = _scores(query_vectors, start, rows, doc_vectors)
        # row by row, so the partition's temporaries are O(documents), not O(block × documents) more
        results += [_row_top_k(row, doc_ids, k, np.argpartition(-row, k - 1)[:k] if k < len(row) else None)
                    for row in scores]
    return results


def _gpu_block_bytes(doc_vectors: Any) -> int:
    """On a GPU, a quarter of its free memory up to 1 GiB per block (~270 queries against 1 M documents):
    the GPU needs wide blocks to be busy, and has the memory for them."""
    if doc_vectors.device.type != "cuda":
        return BLOCK_BYTES
    import torch

    free, _ = torch.cuda.mem_get_info(doc_vectors.device)
    return max(BLOCK_BYTES, min(free // 4, 2**30))


def _scores(query_vectors: np.ndarray, start: int, rows: int, doc_vectors: np.ndarray) -> np.ndarray:
    """The block's score matrix, as close to one product over all the queries as BLAS allows.

    BLAS scores a single row with its matrix-vector kernel, which sums in another order than the
    matrix-matrix kernel that scores every other block: a one-query block of a larger batch is scored beside a
    copy of itself, so it goes through the matrix kernel too (on some CPUs that kernel still rounds by shape).
    """
    block = query_vectors[start : start + rows]
    if len(block) == 1 and len(query_vectors) > 1:
        return (np.vstack([block, block]) @ doc_vectors.T)[:1]
    return block @ doc_vectors.T


def _torch_top_k(query_vectors: np.ndarray, doc_vectors: Any, doc_ids: np.ndarray, k: int, rows: int) -> list[Hits]:
    """The block loop on the tensor's device; k + 1 scores per query come back, the +1 to see a tie at the k-th."""
    import torch

    take = min(k + 1, len(doc_ids))
    results: list[Hits] = []
    with torch.inference_mode():
        for start in range(0, len(query_vectors), rows):
            block = torch.as_tensor(query_vectors[start : start + rows], device=doc_vectors.device, dtype=doc_vectors.dtype)
            scores = block @ doc_vectors.T
            values, positions = torch.topk(scores, take, dim=1)
            values, positions = values.float().cpu().numpy(), positions.cpu().numpy()
            for i in range(len(block)):
                if take > k and values[i, k] == values[i, k - 1]:  # a tie across the cut: every tied document counts
                    row = scores[i].float().cpu().numpy()
                    results.append(_row_top_k(row, doc_ids, k, positions[i, :k]))
                else:
                    results.append(_ordered(doc_ids, positions[i, :k], values[i, :k], k))
    return results


def to_device(vectors: np.ndarray, device: str) -> Any:
    """``vectors`` where they are searched: the numpy array itself on the CPU, a tensor on an accelerator.

    Kept in fp32 whatever the models' precision: fp16 would halve their memory but round the scores to ~1e-3,
    reordering close documents, and the search must return what brute force over the cached vectors returns.
    """
    if device == "cpu":
        return vectors
    import torch

    return torch.from_numpy(vectors).to(device)
