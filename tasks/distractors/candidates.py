"""Hybrid candidate retrieval: BM25 from the index stage plus dense similarity, fused into one ranking.

BM25 finds documents sharing the question's words; a dense model also finds
documents on the same topic in other words. Both search one language with the
question in that language. Each candidate carries its BM25 score (None when
only the dense model found it), its cosine with the question (None without a
dense model) and its difficulty, the similarity to the question: the cosine
when a dense model is given (one scale for every item), else the BM25 score
divided by the best BM25 score of that item and language (1.0 for the top
candidate; BM25 scores are not comparable across queries, their ratio is).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks.distractors.config import DistractorConfig
from tasks.errors import ConfigError
from tasks.index.base import Hit, SearchIndex, read_info
from tasks.rankers.dense import DenseRanker
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

QUERY_CHUNK = 256
"""Questions encoded and scored together: bounds the (questions × documents) score matrix."""


@dataclass(frozen=True)
class DenseHits:
    """One question's dense top-k, and its cosine with every document the fusion will see."""

    top: list[Hit]
    cosine: dict[int, float]


@dataclass(frozen=True)
class Candidate:
    page_id: int
    rank: int
    bm25_score: float | None
    dense_sim: float | None
    difficulty: float


def bm25_hits(backend: SearchIndex, path: Path, lang: str, questions: Sequence[str], k: int) -> list[list[Hit]]:
    """The top ``k`` of each question in the index at ``path``, searched with the config it was built with."""
    info = read_info(path)
    return backend.search(info, lang, list(questions), k, info.config)


def dense_hits(
    embedder: DenseRanker, wh: Warehouse, lang: str, questions: Sequence[str], k: int, bm25: Sequence[list[Hit]],
) -> list[DenseHits]:
    """Each question's dense top ``k`` and the cosine of its BM25 hits too.

    Questions are encoded by the dense ranker's own encoder, so they are
    normalised exactly like the document vectors it caches in the lake, and
    searched where (device, index) the ranker searches.
    """
    ids, vectors = embedder.searched_vectors(wh, lang)
    position = {int(page_id): row for row, page_id in enumerate(ids)}
    results: list[DenseHits] = []
    for start in range(0, len(questions), QUERY_CHUNK):
        chunk = list(questions[start : start + QUERY_CHUNK])
        query_vectors = embedder.encode(chunk)
        for offset, top in enumerate(embedder.search(wh, lang, query_vectors, k)):
            cosine = dict(top)
            for page_id, _ in bm25[start + offset]:
                if page_id not in position:
                    raise ConfigError(
                        f"the {lang} index returned page {page_id}, which is not among the {lang} articles "
                        f"{embedder.model_name} embedded; rebuild the {lang} index from the current documents"
                    )
                cosine.setdefault(page_id, float(vectors[position[page_id]] @ query_vectors[offset]))
            results.append(DenseHits(top, cosine))
    log.info("dense %s: %d questions against %d documents", lang, len(questions), len(ids))
    return results


def fuse(bm25: list[Hit], dense: DenseHits | None, config: DistractorConfig) -> list[Candidate]:
    """One question's candidates, ranked by the configured fusion; ties by difficulty, then page id."""
    scores = dict(bm25)
    lists = [[page_id for page_id, _ in bm25]] + ([[page_id for page_id, _ in dense.top]] if dense else [])
    page_ids = sorted({page_id for ranked in lists for page_id in ranked})
    if dense is not None:
        difficulty = {page_id: dense.cosine[page_id] for page_id in page_ids}
    else:
        best = max(scores.values(), default=0.0)
        difficulty = {page_id: scores[page_id] / best if best > 0 else 0.0 for page_id in page_ids}
    if config.fusion == "rrf":
        fused = {page_id: 0.0 for page_id in page_ids}
        for ranked in lists:
            for rank, page_id in enumerate(ranked, 1):
                fused[page_id] += 1.0 / (config.rrf_k + rank)
    else:
        fused = difficulty
    order = sorted(page_ids, key=lambda page_id: (-fused[page_id], -difficulty[page_id], page_id))
    return [
        Candidate(page_id, rank, scores.get(page_id), dense.cosine[page_id] if dense else None, difficulty[page_id])
        for rank, page_id in enumerate(order, 1)
    ]
