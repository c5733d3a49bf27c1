"""Seeded, order-free sampling of QA candidates."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def seeded_order(items: Sequence[T], seed: int, *, key: Callable[[T], str]) -> list[T]:
    """``items`` in a pseudo-random order fixed by ``seed`` and each item's key.

    Ordering by a hash of (seed, key) rather than shuffling a list keeps an
    item's place independent of which other items exist, so adding a language
    or an article does not reshuffle the sample of the others.
    """
    return sorted(items, key=lambda item: hashlib.sha256(f"{seed}:{key(item)}".encode()).hexdigest())
