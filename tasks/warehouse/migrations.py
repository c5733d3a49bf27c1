"""Schema migrations from ``sql/NNN_name.sql``, applied in order and recorded.

A migration that was applied and later edited is refused: the warehouse would
no longer match the files, and silently diverging schemas are worse than a
stop with a clear message.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import duckdb

from tasks.errors import ConfigError

log = logging.getLogger(__name__)
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def available_migrations() -> list[Migration]:
    """Every ``NNN_name.sql`` shipped in the ``sql`` package, in version order."""
    found = []
    for entry in resources.files("sql").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigError(f"sql/: two migrations share a version number: {versions}")
    return found


def apply_migrations(con: duckdb.DuckDBPyConnection, dialect: Callable[[str], str] = lambda sql: sql) -> list[Migration]:
    """Apply the migrations this warehouse has not seen, each in its own transaction, through ``dialect`` (what a
    DuckLake takes of them: :func:`tasks.warehouse.dialect.for_ducklake`). The checksum is the file's."""
    con.execute(dialect(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    ))
    applied = {row[0]: row[1] for row in con.execute("SELECT version, checksum FROM schema_migrations").fetchall()}
    newly = []
    for migration in available_migrations():
        if migration.version in applied:
            if applied[migration.version] != migration.checksum:
                raise ConfigError(
                    f"sql/{migration.version:03d}_{migration.name}.sql changed after it was applied to this warehouse; "
                    "add a new migration instead of editing an applied one"
                )
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            # another process may have applied it since it was read above (a DuckLake's writers do not take turns)
            if con.execute("SELECT count(*) FROM schema_migrations WHERE version = ?", [migration.version]).fetchone()[0]:
                con.execute("COMMIT")
                continue
            con.execute(dialect(migration.sql))
            con.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?, now())",
                [migration.version, migration.name, migration.checksum],
            )
            con.execute("COMMIT")
        except Exception:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a refused COMMIT ended the transaction already
            raise
        log.info("applied migration %03d_%s", migration.version, migration.name)
        newly.append(migration)
    return newly


def named_views() -> list[tuple[str, str]]:
    """The ``sql/views/NN_name.sql`` definitions, in file-name order so a view follows the views it reads."""
    views = resources.files("sql").joinpath("views")
    return sorted((entry.name, entry.read_text(encoding="utf-8")) for entry in views.iterdir() if entry.name.endswith(".sql"))
