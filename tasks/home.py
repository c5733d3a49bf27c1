"""Opening a home's warehouse with the tables babelbench mirrors into it (the effective language rules).

The warehouse knows nothing of languages; the rules are handed to it here, so
``SELECT … FROM language_rules`` shows the rules in effect for this home.
"""

from __future__ import annotations

from pathlib import Path

from tasks.text.languages import rules_digest, rules_table
from tasks.warehouse.db import Reference, Warehouse


def open_warehouse(home: Path, *, read_only: bool = False, as_of: int | None = None) -> Warehouse:
    """The warehouse under ``home``; a writable one gets the current ``language_rules``; ``as_of``: read-only, as
    it was at that snapshot."""
    if read_only or as_of is not None:
        return Warehouse(home, read_only=True, as_of=as_of)
    return Warehouse(home, references={"language_rules": Reference(rules_digest(), rules_table)})
