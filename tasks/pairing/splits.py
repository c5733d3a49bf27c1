"""Train/dev/test splits that do not leak topics between directions (CLIRMatrix step 7).

The unit is the topic (Wikidata QID), not the query: the title of one topic is
a query in many directions, and a model trained on en→de "Berlin" has seen the
answer to fr→de "Berlin". So every QID gets one split for the whole
collection, from a seeded hash of the QID alone. A direction only chooses
which of its queries fill its caps; it never moves a topic to another split.
Because nothing about a QID's split depends on the other directions or
languages, backfilling a new language leaves every existing split unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from tasks.pairing.config import ClirConfig

Direction = tuple[str, str]


def topic_position(qid: str, seed: int) -> float:
    """The topic's place in [0, 1), stable across runs, machines and Python versions.

    blake2b, not ``hash()``: Python salts string hashes per process.
    """
    digest = hashlib.blake2b(f"{seed}\x1f{qid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _split_ranges(config: ClirConfig) -> list[tuple[str, float, float]]:
    """``(split, start, end)`` ranges of [0, 1); test splits first, then the rest in config order."""
    fractions = config.fractions()
    names = [name for name in fractions if name.startswith("test")]
    names += [name for name in fractions if not name.startswith("test")]
    ranges, start = [], 0.0
    for name in names:
        ranges.append((name, start, start + fractions[name]))
        start += fractions[name]
    return ranges


def _split_at(position: float, ranges: list[tuple[str, float, float]]) -> str | None:
    for name, start, end in ranges:
        if start <= position < end:
            return name
    return None


def global_split(qid: str, config: ClirConfig) -> str | None:
    """The one split ``qid`` belongs to in every direction, or None (full collection only)."""
    return _split_at(topic_position(qid, config.split_seed), _split_ranges(config))


def assign_splits(
    qids_per_direction: Mapping[Direction, Sequence[str]], config: ClirConfig
) -> dict[Direction, dict[str, list[str]]]:
    """Per direction and split, the query QIDs of the 'base' collection.

    Each query's QID falls in its global split (``global_split``). Under a
    split's cap (``config.split_sizes``) a direction keeps the QIDs nearest the
    start of the split's hash range, which is deterministic for a seed and the
    same choice in every direction that has them. Queries beyond a cap, or whose
    QID is in no split, belong to the full collection only. Each list comes in
    that selection order.
    """
    ranges = _split_ranges(config)
    placed: dict[str, tuple[float, str | None]] = {}  # a topic is hashed once, however many directions have it
    assigned: dict[Direction, dict[str, list[str]]] = {}
    for direction, qids in qids_per_direction.items():
        by_split: dict[str, list[tuple[float, str]]] = {name: [] for name in config.split_sizes}
        for qid in set(qids):
            if qid not in placed:
                position = topic_position(qid, config.split_seed)
                placed[qid] = (position, _split_at(position, ranges))
            position, name = placed[qid]
            if name is not None:
                by_split[name].append((position, qid))
        assigned[direction] = {
            name: [qid for _, qid in sorted(members)[: config.split_sizes[name]]]
            for name, members in by_split.items()
        }
    return assigned
