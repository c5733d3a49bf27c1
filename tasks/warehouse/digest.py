"""Content digests of a warehouse's tables: per table or view, its row count and an order-independent hash of its rows.

Two warehouses hold the same data when every table has the same digest, whatever their backend and however the
rows are stored or ordered: ``babelbench warehouse copy`` checks a copy so, and the tests compare two homes that ran
the same commands so (``tests/support/home_snapshot.py``, which says what it leaves out and why).

A row's digest is the SHA-256 of its text (``repr`` of the row, or what a caller makes of it); a table's is the sum
of its rows' digests modulo 2**256, so that it does not depend on the order rows come in, counts a row twice when
it is there twice, and is computed while the rows stream by, without holding or sorting a table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from tasks.warehouse.db import Warehouse

#: (row count, hex digest)
Digest = tuple[int, str]
_MODULUS = 1 << 256


def query_digest(wh: Warehouse, sql: str, line: Callable[[tuple[Any, ...]], str] = repr) -> Digest:
    """The digest of the rows ``sql`` returns, each row hashed as ``line(row)``."""
    total, count = 0, 0
    for rows in wh.batches(sql):
        for row in rows:
            total += int.from_bytes(hashlib.sha256(line(row).encode("utf-8")).digest(), "big")
            count += 1
    return count, f"{total % _MODULUS:064x}"


def tables(wh: Warehouse) -> list[str]:
    """Every table and view of the warehouse's main schema, by name."""
    return [name for (name,) in wh.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                                         " ORDER BY table_name")]


def columns(wh: Warehouse, table: str) -> list[tuple[str, str]]:
    """The (name, type) of ``table``'s columns, in order."""
    return [tuple(row) for row in wh.query("SELECT column_name, data_type FROM information_schema.columns"
                                           " WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                           [table])]


def select_columns(table: str, names: list[str]) -> str:
    """``SELECT`` of ``names`` (quoted) from ``table``; a table left with no column to compare selects a constant."""
    quoted = ", ".join('"' + name.replace('"', '""') + '"' for name in names)
    return f"SELECT {quoted or '1'} FROM {table}"
