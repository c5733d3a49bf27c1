"""How many cases each generated test checked, printed at the end of the run (``pytest_terminal_summary``).

Tests that generate their cases (replies, dates, numbers, scripts) record their count here, so a run shows
that the generation produced what the test claims to cover, not only that nothing failed.
"""

from __future__ import annotations

COUNTS: dict[str, int] = {}


def record(name: str, count: int) -> None:
    """Add ``count`` checked cases under ``name`` (a test may record in several parts)."""
    COUNTS[name] = COUNTS.get(name, 0) + count
