"""The warehouse on a DuckLake: its catalog a PostgreSQL database, its data files in the lake, many writers at once.

Each process attaches the DuckLake once (an in-memory DuckDB with the ``ducklake`` and ``postgres`` extensions
loaded from their packages) and keeps it: there is no file to take turns at, so no cross-process lock.  Every
operation gets a cursor of its own; writers run in transactions that DuckLake settles optimistically, and a
commit it refuses for a concurrent one is replayed (:mod:`tasks.warehouse.replay`).  Data files go to the
lake's location (a local or shared path, or an object store through ``httpfs`` with credentials from the
environment).

See ``docs/warehouse.md``, "The warehouse on a DuckLake".
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import duckdb
from fsspec import AbstractFileSystem
from upath import UPath

from tasks.errors import BabelbenchError, ConfigError
from tasks.warehouse import extensions
from tasks.warehouse.lake import LAKE_ENV, LOCAL_PROTOCOLS, lake_url
from tasks.warehouse.location import Location

log = logging.getLogger(__name__)

#: the name the DuckLake is attached under in every process
CATALOG = "warehouse"
#: object stores DuckDB itself writes to (through httpfs); any other fsspec URL cannot hold a DuckLake's files
REMOTE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "r2", "http", "https"})
#: attempts at the first attach: processes creating a DuckLake's catalog tables at once collide in PostgreSQL
ATTACH_ATTEMPTS = 8
#: past snapshots kept attached per process (each holds catalog connections); the least recently used goes first
ATTACHED_SNAPSHOTS = 8


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def data_path(lake: str) -> str:
    """How DuckDB names a lake for ``DATA_PATH``: a local folder by its absolute path, an object store by URL."""
    url = lake_url(lake)
    root = UPath(url)
    if root.protocol in LOCAL_PROTOCOLS:
        return root.path.rstrip("/") + "/"
    if root.protocol not in REMOTE_PROTOCOLS:
        raise ConfigError(f"{LAKE_ENV}={lake}: a DuckLake writes its data files with DuckDB's own filesystems, a"
                          f" local or shared path or one of {', '.join(sorted(REMOTE_PROTOCOLS))}://; {root.protocol}://"
                          " is reachable through fsspec only")
    return url.rstrip("/") + "/"


def _object_store_secret(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Give DuckDB the object store's credentials from the usual environment variables (never stored anywhere)."""
    if not path.startswith(("s3", "r2", "gs", "gcs")):
        return
    options = {"KEY_ID": "AWS_ACCESS_KEY_ID", "SECRET": "AWS_SECRET_ACCESS_KEY", "SESSION_TOKEN": "AWS_SESSION_TOKEN",
               "REGION": "AWS_REGION", "ENDPOINT": "AWS_ENDPOINT_URL"}
    given = {key: os.environ[env] for key, env in options.items() if os.environ.get(env)}
    if "ENDPOINT" in given:  # DuckDB wants a host[:port], and says whether it speaks TLS separately
        endpoint = given["ENDPOINT"]
        given["USE_SSL"] = "false" if endpoint.startswith("http://") else "true"
        given["ENDPOINT"] = endpoint.split("://", 1)[-1]
        given["URL_STYLE"] = "path"
    if given:
        body = ", ".join(f"{key} {value if key == 'USE_SSL' else _quote(value)}" for key, value in given.items())
        con.execute(f"CREATE OR REPLACE SECRET babelbench_lake (TYPE s3, {body})")


class LakeCatalog:
    """One DuckLake as this process uses it: a DuckDB database with the lake attached, shared by every thread.

    It offers what :class:`tasks.warehouse.db.Warehouse` asks of a backend (cursors, ``retire`` …); nothing here
    waits for another process.
    """

    def __init__(self, location: Location, home: Path) -> None:
        self.location = location
        self.path = location.url
        self.opens = 0
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._filesystem: AbstractFileSystem | None = None
        self._home = home
        self._snapshots: OrderedDict[int, None] = OrderedDict()  # attached past snapshots, oldest use first
        self.created = False  # this process made the DuckLake (its first attach found no catalog)

    # -- the connection ------------------------------------------------------------------
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The process's database with the DuckLake attached as :data:`CATALOG` (attached on first use)."""
        with self._lock:
            if self._con is None:
                self._con = self._attach()
                self.opens += 1
            return self._con

    def _attach(self) -> duckdb.DuckDBPyConnection:
        configured = self.location.lake or os.environ.get(LAKE_ENV, "").strip()
        lake = data_path(configured or str(self._home / "lake"))
        con = duckdb.connect(config=dict(extensions.OFFLINE))
        needed = ["ducklake", "postgres"] + (["httpfs"] if "://" in lake else [])
        extensions.load(con, *needed)
        _object_store_secret(con, lake)
        source = _quote(self.location.url)
        for attempt in range(1, ATTACH_ATTEMPTS + 1):
            try:
                try:
                    if configured:
                        con.execute(f"ATTACH {source} AS {CATALOG} (DATA_PATH {_quote(lake)})")
                    else:
                        con.execute(f"ATTACH {source} AS {CATALOG}")
                except duckdb.InvalidInputException as exc:
                    if "data_path is not set" not in str(exc):
                        raise
                    con.execute(f"ATTACH {source} AS {CATALOG} (DATA_PATH {_quote(lake)})")
                    self.created = True
                return con
            except duckdb.Error as exc:
                message = str(exc)
                if "does not match existing data path" in message:
                    raise BabelbenchError(
                        f"{LAKE_ENV}={configured} names another lake than the one the DuckLake at {self.path} was"
                        f" created with ({message.split('catalog')[-1].strip(' .')}): its catalog lists its data"
                        f" files there. Unset {LAKE_ENV}, or set it to that lake.") from exc
                if attempt == ATTACH_ATTEMPTS or not _first_attach_race(message):
                    con.close()
                    raise BabelbenchError(f"cannot open the DuckLake at {self.path}: {exc}") from exc
                time.sleep(0.2 * attempt)  # another process is creating the catalog tables right now
        raise AssertionError("unreachable")

    def cursor(self, snapshot: int | None = None) -> duckdb.DuckDBPyConnection:
        """A new cursor whose default catalog is the DuckLake (at ``snapshot``, read-only, when given)."""
        con = self.connection()
        alias = self._at(con, snapshot) if snapshot is not None else CATALOG
        cur = con.cursor()
        cur.execute(f"USE {alias}")
        return cur

    def _at(self, con: duckdb.DuckDBPyConnection, snapshot: int) -> str:
        """The DuckLake as it was at ``snapshot``, attached read-only once per process under its own name."""
        alias = f"{CATALOG}_v{snapshot}"
        with self._lock:
            if snapshot in self._snapshots:
                self._snapshots.move_to_end(snapshot)
            else:
                known = con.execute(f"SELECT count(*) FROM ducklake_snapshots({_quote(CATALOG)}) WHERE snapshot_id = ?",
                                    [snapshot]).fetchone()
                if not known or not known[0]:
                    latest = con.execute(f"SELECT id FROM {CATALOG}.current_snapshot()").fetchone()
                    raise BabelbenchError(f"the warehouse at {self.path} has no snapshot {snapshot} (it has snapshots"
                                          f" up to {latest[0] if latest else 0}; expired ones are gone)")
                con.execute(f"ATTACH {_quote(self.location.url)} AS {alias} (SNAPSHOT_VERSION {int(snapshot)}, READ_ONLY)")
                self._snapshots[snapshot] = None
                if len(self._snapshots) > ATTACHED_SNAPSHOTS:  # a worker reads at a new snapshot for every result
                    oldest, _ = self._snapshots.popitem(last=False)
                    con.execute(f"DETACH {CATALOG}_v{oldest}")
        return alias

    def snapshot(self, cursor: duckdb.DuckDBPyConnection) -> int:
        """The id of the snapshot ``cursor`` reads (its transaction's, or the latest committed)."""
        row = cursor.execute(f"SELECT id FROM {CATALOG}.current_snapshot()").fetchone()
        return int(row[0]) if row else 0

    # -- what the Warehouse asks of a backend -----------------------------------------------
    def use_filesystem(self, filesystem: AbstractFileSystem) -> None:
        """Register the lake's fsspec filesystem once, so the staged shards of an fsspec lake can be read."""
        with self._lock:
            if self._filesystem is None and self._con is not None:
                self._con.register_filesystem(filesystem)
                self._filesystem = filesystem

    def retire(self, paths: Sequence[UPath]) -> None:
        """Nothing to retire: a DuckLake's replaced data files are its own, deleted by its maintenance."""

    def retiring_folders(self) -> set[str]:
        return set()

    def close_idle(self) -> None:
        """Nothing to release between operations: no other process waits for this one."""

    def close(self) -> None:
        with self._lock:
            con, self._con = self._con, None
            self._snapshots.clear()
        if con is not None:
            con.close()


def _first_attach_race(message: str) -> bool:
    """Whether a failed attach looks like two processes creating a new DuckLake's catalog tables at once."""
    lowered = message.lower()
    return any(sign in lowered for sign in ("already exists", "duplicate key", "unique constraint", "conflict"))
