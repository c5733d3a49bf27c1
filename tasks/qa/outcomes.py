"""Shared by the QA stages: an item's status from its model call, and seeded, order-free sampling."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TypeVar

from tasks.llm import CallResult
from tasks.llm.parsing import Parsed

T = TypeVar("T")


def item_outcome(result: CallResult, parse: Callable[[str], Parsed]) -> Parsed:
    """The item's status: ``ok`` with the parsed value, or why there is none.

    A failed call becomes ``call_failed`` with the client's reason, a budget
    stop ``skipped_budget``; an answer that does not parse ``parse_failed``.
    """
    if result.response is None:
        if result.status == "skipped_budget":
            # a retry the budget stopped says so, with the failure it was retrying
            return Parsed("skipped_budget", None, result.error or "not called: the run's budget was reached")
        return Parsed("call_failed", None, result.error or "the call failed")
    return parse(result.answer)  # past any echo of the prompt: never the prompt's worked example


def seeded_order(items: Sequence[T], seed: int, *, key: Callable[[T], str]) -> list[T]:
    """``items`` in a pseudo-random order fixed by ``seed`` and each item's key.

    Ordering by a hash of (seed, key) rather than shuffling a list keeps an
    item's place independent of which other items exist, so adding a language
    or an article does not reshuffle the sample of the others.
    """
    return sorted(items, key=lambda item: hashlib.sha256(f"{seed}:{key(item)}".encode()).hexdigest())
