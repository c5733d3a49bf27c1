"""Where the warehouse is: the embedded DuckDB file in the home, or a DuckLake whose catalog is a PostgreSQL database.

``BABELBENCH_WAREHOUSE`` (``--warehouse`` on the command line) names it. Unset, it is the home's
``warehouse.duckdb``, which needs no setup; ``ducklake:postgres:<libpq conninfo>`` is a DuckLake for many writers
on many machines, its data files in the lake (``BABELBENCH_LAKE``). The conninfo is libpq's (``host=… port=…
dbname=… user=…``, or a ``postgresql://`` URI); a password in it is refused, since the URL is shown in logs and
run records: libpq reads it from ``PGPASSWORD`` or a password file instead.

See ``docs/warehouse.md``, "The warehouse on a DuckLake".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from tasks.errors import ConfigError

WAREHOUSE_ENV = "BABELBENCH_WAREHOUSE"
WAREHOUSE_FILE = "warehouse.duckdb"
DUCKLAKE_PREFIX = "ducklake:postgres:"
_PASSWORD_KEY = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)


@dataclass(frozen=True)
class Location:
    """One warehouse: ``kind`` embedded (``path`` its DuckDB file) or ducklake (``conninfo`` its catalog).

    ``lake``: the lake named with it (``warehouse copy --lake``: a copy's target), in place of ``BABELBENCH_LAKE``,
    which names the lake of the process's own warehouse."""

    kind: str
    path: Path | None = None
    conninfo: str = ""
    lake: str | None = None

    @property
    def is_lake(self) -> bool:
        return self.kind == "ducklake"

    @property
    def url(self) -> str:
        """How the location is named to people and records: the file's path or the ``ducklake:postgres:`` URL."""
        return DUCKLAKE_PREFIX + self.conninfo if self.is_lake else str(self.path)


def parse_location(value: str, home: Path) -> Location:
    """The location ``value`` names (empty: the home's embedded file); a clear error for anything else."""
    value = value.strip()
    if not value:
        return Location("embedded", path=home / WAREHOUSE_FILE)
    if not value.startswith(DUCKLAKE_PREFIX):
        raise ConfigError(
            f"{WAREHOUSE_ENV}={value!r}: expected nothing (the home's embedded DuckDB file) or"
            f" '{DUCKLAKE_PREFIX}<libpq conninfo>', e.g. '{DUCKLAKE_PREFIX}host=db.internal dbname=babelbench'")
    conninfo = value[len(DUCKLAKE_PREFIX):].strip()
    if not conninfo:
        raise ConfigError(f"{WAREHOUSE_ENV}={value!r}: the PostgreSQL connection string after"
                          f" '{DUCKLAKE_PREFIX}' is empty (e.g. 'host=db.internal dbname=babelbench user=bb')")
    uri = urlsplit(conninfo) if conninfo.startswith(("postgresql://", "postgres://")) else None
    if _PASSWORD_KEY.search(conninfo) or (uri is not None and uri.password):
        raise ConfigError(f"{WAREHOUSE_ENV}: the connection string carries a password; give it to libpq through"
                          " PGPASSWORD or a password file (PGPASSFILE, ~/.pgpass) instead, so it is never logged")
    return Location("ducklake", conninfo=conninfo)


def configured_location(home: Path) -> Location:
    """The warehouse of this process: ``$BABELBENCH_WAREHOUSE``, else the home's embedded file."""
    return parse_location(os.environ.get(WAREHOUSE_ENV, ""), home)


def copy_target(value: str, home: Path, lake: str | None) -> tuple[Path, Location]:
    """The home and warehouse ``warehouse copy --to`` names: a DuckLake URL (its data files in ``lake``, else in
    ``home``'s ``lake/``), or a folder: the embedded warehouse of that home (its lake ``lake``, else its own)."""
    value = value.strip()
    if not value:
        raise ConfigError(f"--to is empty: give '{DUCKLAKE_PREFIX}<libpq conninfo>' or the folder of a home")
    if value.startswith(DUCKLAKE_PREFIX):
        return home, replace(parse_location(value, home), lake=lake or str(home / "lake"))
    folder = Path(value).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--to {value}: not a folder; give the folder of a home (its warehouse is"
                          f" {WAREHOUSE_FILE} there) or '{DUCKLAKE_PREFIX}<libpq conninfo>'")
    return folder, Location("embedded", path=folder / WAREHOUSE_FILE, lake=lake or str(folder / "lake"))
