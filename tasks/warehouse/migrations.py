"""Schema migrations from ``sql/NNN_name.sql``, applied in order and recorded; then those of plugin packages.

A migration that was applied and later edited is refused: the warehouse would
no longer match the files, and silently diverging schemas are worse than a
stop with a clear message.  A package that adds a recipe (or any plugin)
with tables of its own ships its migrations in a namespace of its own: an
entry point in the group ``babelbench.migrations`` names a package whose
``NNN_name.sql`` files are applied after the core's, in order, each in its
own transaction, and recorded in ``plugin_migrations`` under the entry
point's name — the same rules, so a plugin's versions never collide with the
core's or another plugin's.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import entry_points

import duckdb

from tasks.errors import ConfigError

log = logging.getLogger(__name__)
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
MIGRATIONS_GROUP = "babelbench.migrations"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def available_migrations(package: str = "sql") -> list[Migration]:
    """Every ``NNN_name.sql`` shipped in ``package`` (the core's: ``sql``), in version order."""
    found = []
    try:
        files = list(resources.files(package).iterdir())
    except (ModuleNotFoundError, TypeError) as exc:
        raise ConfigError(f"migrations package {package!r} cannot be read: {exc}") from exc
    for entry in files:
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigError(f"{package}: two migrations share a version number: {versions}")
    return found


def plugin_migrations() -> dict[str, list[Migration]]:
    """namespace → its migrations, for every entry point of the group ``babelbench.migrations`` (name: the
    namespace, value: the package holding its files), in namespace order."""
    return {entry.name: available_migrations(entry.value)
            for entry in sorted(entry_points(group=MIGRATIONS_GROUP), key=lambda e: e.name)}


def apply_migrations(con: duckdb.DuckDBPyConnection, dialect: Callable[[str], str] = lambda sql: sql) -> list[Migration]:
    """Apply the migrations this warehouse has not seen — the core's, then each plugin namespace's — each in its own
    transaction, through ``dialect`` (what a DuckLake takes of them: :func:`tasks.warehouse.dialect.for_ducklake`).
    The checksum is the file's."""
    con.execute(dialect(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    ))
    applied = {row[0]: row[1] for row in con.execute("SELECT version, checksum FROM schema_migrations").fetchall()}
    newly = _apply(con, dialect, "sql", available_migrations(), applied, "schema_migrations", [])
    for namespace, migrations in plugin_migrations().items():
        applied = dict(con.execute("SELECT version, checksum FROM plugin_migrations WHERE namespace = ?",
                                   [namespace]).fetchall())
        newly += _apply(con, dialect, namespace, migrations, applied, "plugin_migrations", [namespace])
    return newly


def _apply(con: duckdb.DuckDBPyConnection, dialect: Callable[[str], str], where: str, migrations: list[Migration],
           applied: dict[int, str], table: str, key: list[str]) -> list[Migration]:
    """Apply ``migrations`` not in ``applied`` (version → checksum), recording each in ``table`` after ``key`` (the
    namespace of a plugin's, none for the core's)."""
    recorded = f"SELECT count(*) FROM {table} WHERE {'namespace = ? AND ' if key else ''}version = ?"
    record = f"INSERT INTO {table} VALUES ({'?, ' * (len(key) + 3)}now())"
    newly = []
    for migration in migrations:
        if migration.version in applied:
            if applied[migration.version] != migration.checksum:
                raise ConfigError(
                    f"{where}/{migration.version:03d}_{migration.name}.sql changed after it was applied to this"
                    " warehouse; add a new migration instead of editing an applied one"
                )
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            # another process may have applied it since it was read above (a DuckLake's writers do not take turns)
            if con.execute(recorded, [*key, migration.version]).fetchone()[0]:
                con.execute("COMMIT")
                continue
            con.execute(dialect(migration.sql))
            con.execute(record, [*key, migration.version, migration.name, migration.checksum])
            con.execute("COMMIT")
        except Exception:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a refused COMMIT ended the transaction already
            raise
        log.info("applied migration %s/%03d_%s", where, migration.version, migration.name)
        newly.append(migration)
    return newly


def named_views() -> list[tuple[str, str]]:
    """The ``sql/views/NN_name.sql`` definitions, in file-name order so a view follows the views it reads."""
    views = resources.files("sql").joinpath("views")
    return sorted((entry.name, entry.read_text(encoding="utf-8")) for entry in views.iterdir() if entry.name.endswith(".sql"))
