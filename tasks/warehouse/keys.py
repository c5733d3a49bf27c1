"""The keys of the warehouse's tables, as the migrations declare them, for the backend that cannot enforce them.

The embedded DuckDB file enforces each table's PRIMARY KEY; a DuckLake keeps no keys.  Writers that rely on a key
(an upsert, a copy that checks a table has no duplicate key) read it here, so there is one statement of each key:
the migrations, built once per process in an in-memory DuckDB (tens of milliseconds, and only when a key is asked).
"""

from __future__ import annotations

from functools import cache

import duckdb

from tasks.errors import BabelbenchError
from tasks.warehouse.migrations import available_migrations


@cache
def table_keys() -> dict[str, tuple[str, ...]]:
    """Table name -> its primary key's columns, for every table whose migration declares one."""
    con = duckdb.connect()
    try:
        for migration in available_migrations():
            con.execute(migration.sql)
        rows = con.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints()"
                           " WHERE constraint_type = 'PRIMARY KEY'").fetchall()
    finally:
        con.close()
    return {table: tuple(columns) for table, columns in rows}


def key_of(table: str) -> tuple[str, ...]:
    """The key columns of ``table``; an error for a table the migrations give no key (nothing to upsert on)."""
    try:
        return table_keys()[table]
    except KeyError:
        raise BabelbenchError(f"table {table!r} has no primary key in sql/: an upsert needs one") from None
