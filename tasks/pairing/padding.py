"""Padding 'base' queries to a fixed number of candidates (CLIRMatrix step 8).

Every query of the 'base' collection is filled up to K candidates, so a
reranker sees the same number of documents per query. The missing ones are random
documents labelled 0; each row says whether it is padding, so evaluations can
leave padding out or count it. Padding only fills up: every judged document
stays, so a query whose own article was appended after its K hits keeps all
K + 1 judgements and gets no padding.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

#: Below this many pool documents per needed one, draw from the filtered pool instead of by rejection.
_DENSE_POOL_FACTOR = 4


def _query_rng(seed: int, query_id: str) -> random.Random:
    """A generator that depends on the seed and this query only.

    So a query's padding is the same in every run, whatever other queries are
    padded, in which order or on which worker. ``random.Random`` seeded with an
    int draws the same numbers on every Python version.
    """
    digest = hashlib.blake2b(f"{seed}\x1f{query_id}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def pad(
    results: Sequence[tuple[int, int]], pool: Sequence[int], k: int, seed: int, query_id: str
) -> list[tuple[int, int, bool]]:
    """All judged ``results`` as ``(doc_id, label, False)``, then padding ``(doc_id, 0, True)`` up to ``k`` rows.

    The judged results come first, best label first, then by doc id, and none
    is ever dropped: they are the query's relevance judgements, and cutting the
    lowest-labelled one to make room for an appended own article (label 6)
    would turn a relevant document into an unjudged one. So a query with more
    than ``k`` judgements keeps them all and gets no padding. Padding
    documents are drawn without replacement from ``pool`` minus the results,
    labelled 0. ``pool`` must come in a stable order (e.g. sorted doc ids) for
    the draw to be reproducible. If the pool holds too few new documents, the
    query gets as many as there are and stays short of ``k``.
    """
    if k < 0:
        raise ValueError(f"query {query_id}: k must not be negative, got {k}")
    present = [doc_id for doc_id, _ in results]
    if len(set(present)) != len(present):
        raise ValueError(f"query {query_id}: a document appears twice among the results")
    rows = [(doc_id, label, False) for doc_id, label in sorted(results, key=lambda item: (-item[1], item[0]))]
    needed = k - len(rows)
    if needed <= 0:
        return rows
    taken = set(present)
    rng = _query_rng(seed, query_id)
    drawn = None
    if len(pool) > _DENSE_POOL_FACTOR * (needed + len(taken)):
        drawn = _draw_by_rejection(pool, taken, needed, rng)
    if drawn is None:
        fresh = list(dict.fromkeys(doc_id for doc_id in pool if doc_id not in taken))
        drawn = rng.sample(fresh, min(needed, len(fresh)))
    return rows + [(doc_id, 0, True) for doc_id in drawn]


def _draw_by_rejection(pool: Sequence[int], taken: set[int], needed: int, rng: random.Random) -> list[int] | None:
    """``needed`` new documents drawn by position, without copying a large pool.

    Gives up (None) after a bounded number of misses, which only a pool full of
    repeated ids can cause; the caller then filters the pool instead.
    """
    taken = set(taken)
    drawn: list[int] = []
    misses = 0
    while len(drawn) < needed:
        doc_id = pool[rng.randrange(len(pool))]
        if doc_id in taken:
            misses += 1
            if misses > _DENSE_POOL_FACTOR * needed + 100:
                return None
            continue
        taken.add(doc_id)
        drawn.append(doc_id)
    return drawn
