"""Rating methods by name: how battles become ratings with intervals.

Bradley–Terry (:mod:`tasks.arena.bradley_terry`) is the one built in; it is
registered as an import path like the other plugins (:mod:`tasks.plugins`),
and another package adds a method with an entry point in the group
``babelbench.rating-method``.  A method's result has the shape
:func:`tasks.arena.bradley_terry.ratings` documents, which the reports and
the ``arena_ratings`` rows read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tasks.arena.bradley_terry import Battle, Ties
from tasks.plugins import Kind, register_lazy

DEFAULT_METHOD = "bradley-terry"


class RatingMethod(Protocol):
    """Ratings of systems from pairwise battles under a tie policy (``drop`` or ``half``)."""

    def ratings(self, battles: Sequence[Battle], *, bootstrap: int, seed: int, ties: Ties) -> dict[str, Any]:
        """``{"models": {name: {rating, ci_low, ci_high, rank_low, rank_high, unbounded}}, "n_battles", "ties",
        "order_flips"}``, the intervals from ``bootstrap`` tournaments drawn with ``seed``."""
        ...

    def rateable(self, battles: Sequence[Battle], ties: Ties) -> bool:
        """Whether the battles leave anything to rate under the tie policy."""
        ...


RATING_METHODS: Kind[RatingMethod] = Kind("rating-method", RatingMethod, "rating method")
register_lazy(RATING_METHODS.name, DEFAULT_METHOD, "tasks.arena.bradley_terry")
