"""Ratings as people read them: their order, one rating as text, and the table ``arena`` and ``leaderboard`` print.

Plain Python on stored rows (no numerics imported), so a command that only
shows ratings answers at once.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

UNBOUNDED_RATING = {"high": "+∞ (never lost to the rated systems)", "low": "−∞ (never won against the rated systems)",
                    "both": "n/a (no decisive battle with the rated systems)"}
#: the table's columns: the place in rating order, the system, its rating and 95% interval, the 95% interval of its
#: rank, the sampled queries it had no answer to (each a loss), and the battles rated in its slice
COLUMNS = ("rank", "model", "rating", "95% CI", "rank interval", "forfeits", "battles", "")


def rating_order(m: Mapping[str, Any]) -> float:
    """A rating to sort by: an unbounded one above (``"high"``) or below every finite one."""
    return m["rating"] if m["rating"] is not None else math.inf if m["unbounded"] == "high" else -math.inf


def best_first(row: Mapping[str, Any]) -> tuple[float, bool, str]:
    """Rating order, an unbounded rating above (below) every finite one; the judged before the predicted."""
    return -rating_order(row), bool(row["predicted"]), row["model"]


def _interval(m: Mapping[str, Any]) -> str:
    low = "−∞" if m["ci_low"] is None else f"{m['ci_low']:+.3f}"
    high = "+∞" if m["ci_high"] is None else f"{m['ci_high']:+.3f}"
    return f"[{low}, {high}]"


def _ranks(m: Mapping[str, Any]) -> str:
    return str(m["rank_low"]) if m["rank_low"] == m["rank_high"] else f"{m['rank_low']}–{m['rank_high']}"


def rating_text(m: Mapping[str, Any]) -> str:
    """One rating as text: the logit and its 95% interval (∞ on an open side), or why it has no finite value, and
    the rank interval."""
    value = UNBOUNDED_RATING[m["unbounded"]] if m["rating"] is None else f"{m['rating']:+.3f}  95% CI {_interval(m)}"
    return f"{value}  rank {_ranks(m)}"


def ratings_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Stored ratings of one slice (``arena_ratings`` rows) as aligned lines, best first, with a note under the
    table for each unbounded rating and for ratings the surrogate predicted."""
    cells = []
    for place, m in enumerate(sorted(rows, key=best_first), start=1):
        finite = m["rating"] is not None
        rating = f"{m['rating']:+.3f}" if finite else UNBOUNDED_RATING[m["unbounded"]].split(" ", 1)[0]
        forfeits = "-" if m["failed_queries"] is None else str(m["failed_queries"])
        note = "predicted from features" if m["predicted"] else "" if finite else UNBOUNDED_RATING[m["unbounded"]]
        cells.append([str(place), m["model"], rating, _interval(m) if finite else "-", _ranks(m), forfeits,
                      str(m["n_battles"]), note])
    widths = [max(len(column), *(len(row[n]) for row in cells)) for n, column in enumerate(COLUMNS)]
    return ["  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()
            for row in [list(COLUMNS), *cells]]


def window_tables(rows: Sequence[Mapping[str, Any]], overall: Sequence[Mapping[str, Any]],
                  with_cutoff: Collection[str]) -> list[str]:
    """One judge's ratings per knowledge-cutoff window (``arena_ratings`` rows whose ``subset`` is a window) as one
    table per window, then the judged systems of ``overall`` that have none: "unknown cutoff" unless the system is
    in ``with_cutoff``.  Nothing when the judge has no window ratings (a benchmark without dated articles)."""
    if not rows:
        return []
    lines: list[str] = []
    for subset in sorted({row["subset"] for row in rows}):
        lines += ["", f"{subset}: rated on the battles whose question is {subset.removeprefix('window:')} for both"
                      " systems"]
        lines += ratings_table([row for row in rows if row["subset"] == subset])
    absent = sorted({row["model"] for row in overall if not row["predicted"]} - {row["model"] for row in rows})
    if absent:
        lines.append("no window ratings: " + ", ".join(
            system if system in with_cutoff else f"{system} (unknown cutoff)" for system in absent))
    return lines
