"""A FAISS index over a language's document vectors, stored in the lake beside their embedding cache.

``flat`` is exact (inner product over every vector, FAISS's blocked BLAS
kernels) and returns what :func:`tasks.rankers.search.top_k` returns: FAISS
is asked for k + 1 hits, and a query whose k-th and (k+1)-th scores tie is
answered by the exact block search, which settles the tie by doc id. (FAISS
sums the products in its own order, so a score may differ from numpy's in
its last bit, ~1e-7.) ``ivf``
(inverted lists over k-means cells, ``nprobe`` of them searched) and ``hnsw``
(a proximity graph) are approximate: faster on millions of vectors, at a
recall below 1, which :func:`recall_at` measures against exact. An
approximate index changes the ranker's name (``dense@ivf:MODEL``) so its
results are never mixed with exact ones.

On a machine with the FAISS GPU build and a CUDA placement, the index is
copied to the GPU for searching; the stored form is always the CPU one.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal

import numpy as np
from upath import UPath

from tasks.errors import ConfigError
from tasks.rankers.search import Hits, top_k
from tasks.warehouse.lake import write_atomic

log = logging.getLogger(__name__)

IndexKind = Literal["exact", "flat", "ivf", "hnsw"]
INDEX_KINDS: tuple[str, ...] = ("exact", "flat", "ivf", "hnsw")
APPROXIMATE = ("ivf", "hnsw")
HNSW_NEIGHBOURS = 32
HNSW_EF_SEARCH = 256
IVF_TRAIN_PER_LIST = 64
"""k-means training points per inverted list (FAISS warns below 39)."""


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ConfigError("the flat, ivf and hnsw dense indexes need faiss (pip install faiss-cpu, or faiss-gpu "
                          "on a CUDA machine); the exact index needs nothing") from exc
    return faiss


def ivf_lists(n: int) -> int:
    """Inverted lists for ``n`` vectors: ~4·√n (FAISS's guidance), at least 1, each with training points."""
    return max(1, min(int(4 * math.sqrt(n)), n // IVF_TRAIN_PER_LIST or 1))


def build(kind: str, vectors: np.ndarray, *, seed: int = 0) -> Any:
    """A FAISS index of ``kind`` over ``vectors`` (rows in doc order: FAISS's labels are row positions)."""
    faiss = _faiss()
    dim = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = HNSW_EF_SEARCH
    elif kind == "ivf":
        lists = ivf_lists(len(vectors))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(seed).permutation(len(vectors))[: lists * IVF_TRAIN_PER_LIST]
        index.train(np.ascontiguousarray(vectors[np.sort(sample)]))
        index.nprobe = max(1, min(lists, int(math.sqrt(lists)) * 2))
    else:
        raise ConfigError(f"unknown dense index {kind!r}: use one of {', '.join(INDEX_KINDS)}")
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def load_or_build(path: UPath, kind: str, vectors: np.ndarray) -> Any:
    """The index stored at ``path`` if it is there and holds as many vectors, else a new one, stored."""
    faiss = _faiss()
    if path.exists():
        with path.open("rb") as handle:
            index = faiss.deserialize_index(np.frombuffer(handle.read(), dtype=np.uint8))
        if index.ntotal == len(vectors) and index.d == vectors.shape[1]:
            return index
        log.warning("%s holds %d vectors of %d dimensions, not %d × %d; building it again",
                    path, index.ntotal, index.d, len(vectors), vectors.shape[1])
    index = build(kind, vectors)

    def save(tmp: UPath) -> None:
        with tmp.open("wb") as handle:
            handle.write(faiss.serialize_index(index).tobytes())

    write_atomic(path, save)
    log.info("built a %s index of %d vectors at %s", kind, len(vectors), path)
    return index


def on_device(index: Any, device: str) -> Any:
    """The index copied to the GPU where FAISS was built with CUDA and the placement is CUDA; else as it is."""
    faiss = _faiss()
    if not device.startswith("cuda") or not hasattr(faiss, "StandardGpuResources"):
        return index
    resources = faiss.StandardGpuResources()
    return faiss.index_cpu_to_gpu(resources, int(device.partition(":")[2] or 0), index)


def search(index: Any, kind: str, query_vectors: np.ndarray, doc_vectors: np.ndarray, doc_ids: np.ndarray,
           k: int) -> list[Hits]:
    """Each query's top ``k`` from ``index``; for ``flat`` exactly :func:`top_k`'s answer (see the module notes)."""
    k = min(k, len(doc_ids))
    if k <= 0 or not len(query_vectors):
        return [[] for _ in range(len(query_vectors))]
    exact = kind == "flat"
    take = min(k + 1, len(doc_ids)) if exact else k
    scores, positions = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), take)
    results: list[Hits] = []
    for i in range(len(query_vectors)):
        if exact and take > k and scores[i, k] == scores[i, k - 1]:
            results += top_k(query_vectors[i : i + 1], doc_vectors, doc_ids, k)
            continue
        found = positions[i, :k][positions[i, :k] >= 0]  # an approximate index may find fewer than k
        row = scores[i, : len(found)]
        order = np.lexsort((doc_ids[found], -row))
        results.append([(int(doc_ids[found[j]]), float(row[j])) for j in order])
    return results


def recall_at(approximate: list[Hits], exact: list[Hits], k: int = 100) -> float:
    """Mean share of each query's exact top ``k`` that the approximate top ``k`` also found."""
    shares = [len({d for d, _ in a[:k]} & {d for d, _ in e[:k]}) / len(e[:k])
              for a, e in zip(approximate, exact, strict=True) if e]
    return float(np.mean(shares)) if shares else 1.0
