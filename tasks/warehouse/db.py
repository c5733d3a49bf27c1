"""The warehouse: its tables and views, on the embedded DuckDB file or on a DuckLake, and its Parquet lake.

Where it is comes from ``BABELBENCH_WAREHOUSE`` (:mod:`tasks.warehouse.location`): by default one DuckDB file in
the home, which processes take turns at (:mod:`tasks.warehouse.embedded`); or a DuckLake whose catalog is a
PostgreSQL database, which many processes on many machines write at once (:mod:`tasks.warehouse.ducklake`).
Every caller sees one interface: queries, ``transaction()`` blocks, :meth:`Warehouse.replace_cells` for lake
tables, :func:`upsert` for keyed rows, and :meth:`Warehouse.cell_commit` for everything one stage cell writes.

See ``docs/warehouse.md``.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from tasks.errors import BabelbenchError, ConfigError
from tasks.warehouse.dialect import for_ducklake
from tasks.warehouse.ducklake import LakeCatalog
from tasks.warehouse.embedded import database
from tasks.warehouse.keys import key_of
from tasks.warehouse.lake import (
    LAKE_TABLES,
    LOCAL_PROTOCOLS,
    Shard,
    configured_lake,
    duckdb_path,
    empty_shard,
    lake_url,
    locate_lake,
)
from tasks.warehouse.location import Location, configured_location
from tasks.warehouse.migrations import apply_migrations, named_views
from tasks.warehouse.replay import Recorder, commit_with_replays, is_conflict, rollback

log = logging.getLogger(__name__)

#: on a DuckLake, a lake table's rows live in ``<table>__cells`` with their cell; ``<table>`` is a view without it
CELLS_SUFFIX = "__cells"
#: the guard every commit that records a stage cell's outcome takes (sql/026_commit_guards.sql)
ARTIFACTS_GUARD = "artifacts"
#: how many times a process tries to bring a DuckLake's schema up to date while others do the same
SCHEMA_ATTEMPTS = 12

_catalogs: dict[str, LakeCatalog] = {}
_catalogs_lock = threading.Lock()
_inherited: list[dict[str, LakeCatalog]] = []


def _lake_catalog(location: Location, home: Path) -> LakeCatalog:
    """The process's one :class:`LakeCatalog` per DuckLake."""
    with _catalogs_lock:
        if location.url not in _catalogs:
            _catalogs[location.url] = LakeCatalog(location, home)
        return _catalogs[location.url]


def _forget_catalogs_after_fork() -> None:
    """A forked child attaches its own DuckLake; the parent's connections are not the child's to use, and are kept
    referenced, never closed here: closing one in the child runs its PostgreSQL pool's destructor on locks that
    other threads of the parent held at the fork, which hangs the child for good (a subprocess started with a
    ``preexec_fn`` runs this hook before its exec)."""
    global _catalogs, _catalogs_lock
    _inherited.append(_catalogs)
    _catalogs, _catalogs_lock = {}, threading.Lock()


os.register_at_fork(after_in_child=_forget_catalogs_after_fork)


@dataclass(frozen=True)
class Reference:
    """A table the caller owns the content of: a digest of its content, and its rows, built only when the
    warehouse's copy has another digest, so the open every command makes does not rebuild and rewrite a table
    that rarely changes."""

    digest: str
    rows: Callable[[], pa.Table]


@dataclass
class _Cell:
    """One stage cell's transaction on a DuckLake: begun by the first write of its thread, committed at its end."""

    warehouse: Warehouse
    thread: int
    what: str
    recorder: Recorder | None = None


_cell: contextvars.ContextVar[_Cell | None] = contextvars.ContextVar("warehouse_cell", default=None)


class Warehouse:
    """The warehouse under ``home``, on the backend ``BABELBENCH_WAREHOUSE`` names: migrations applied, views current.

    ``as_of``: read the DuckLake as it was at that snapshot (read-only); an embedded warehouse keeps no snapshots.
    """

    def __init__(self, home: Path, *, read_only: bool = False, references: Mapping[str, Reference] | None = None,
                 as_of: int | None = None, location: Location | None = None) -> None:
        """``references``: tables the caller owns the content of (the language rules), mirrored into the warehouse
        when a writable one is opened and its copy differs, so SQL can join them. ``location``: another warehouse
        than the one ``BABELBENCH_WAREHOUSE`` names (a copy's target)."""
        self.home = home
        self.location = location or configured_location(home)
        self.as_of = as_of
        self.read_only = read_only or as_of is not None
        if self.location.is_lake:
            self._db: Any = _lake_catalog(self.location, home)
        else:
            if as_of is not None:
                raise ConfigError(f"--as-of {as_of}: the embedded warehouse ({self.location.path}) keeps no snapshots;"
                                  " reading a past state needs a DuckLake warehouse (BABELBENCH_WAREHOUSE=ducklake:…)")
            if self.read_only and not self.location.path.exists():
                raise BabelbenchError(f"no warehouse at {self.location.path}; run `babelbench corpus ingest` or"
                                      " `babelbench demo` first")
            home.mkdir(parents=True, exist_ok=True)
            self._db = database(self.location.path.resolve())
        self.path = self.location.url
        if self.read_only:
            with self._cursor() as cur:
                if self.location.is_lake and not _has_table(cur, "schema_migrations"):
                    raise BabelbenchError(f"no warehouse in the DuckLake at {self.location.url}; run `babelbench"
                                          " corpus ingest` or `babelbench demo` with it first")
                self.lake_root = self._open_lake(cur)
            return
        new_lake = configured_lake(home, self.location.lake)  # a bad lake fails before a warehouse is created
        if self.location.is_lake:
            self._prepare_lake(new_lake, references or {})
            return
        with self._db.write_lock, self._db.session(read_only=False) as con:
            cur = con.cursor()
            try:
                if any(migration.version == 1 for migration in apply_migrations(cur)):
                    cur.execute("UPDATE warehouse_info SET lake = ?", [new_lake])
                self.lake_root = self._open_lake(cur)
            finally:
                cur.close()
            self._mirror(references or {})
            self.refresh_views()

    # -- reading -----------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[tuple]:
        """Rows of a query, from a cursor private to the calling thread; ``params`` by position or by name."""
        with self._cursor() as cur:
            return cur.execute(sql, params or []).fetchall()

    def query_with_columns(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Column names and rows (names are known even when there are no rows)."""
        with self._cursor() as cur:
            result = cur.execute(sql, params or [])
            names = [d[0] for d in result.description] if result.description else []
            return names, result.fetchall()

    def batches(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None,
                size: int = 10_000) -> Iterator[list[tuple]]:
        """The rows of a query in lists of at most ``size``, fetched as they are consumed (a table too large to
        hold at once); ``params`` by position (``?``) or by name (``$name``)."""
        with self._cursor() as cur:
            result = cur.execute(sql, params or [])
            while rows := result.fetchmany(size):
                yield rows

    def key_ranges(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None, size: int) -> list[tuple[Any, Any, int]]:
        """``(first, last, count)`` of each run of ``size`` consecutive values of the distinct keys ``sql`` selects
        (one column), in order: the ranges a large ordered read takes one at a time, so that DuckDB sorts one
        range's rows at a time instead of holding all of them (its memory limit does not make such a sort spill)."""
        return [tuple(row) for row in self.query(
            f"SELECT min(k), max(k), count(*) FROM (SELECT k, (row_number() OVER (ORDER BY k) - 1) // {int(size)}"
            f" AS part FROM ({sql}) AS keys(k)) GROUP BY part ORDER BY part", params)]

    def arrow_batches(self, sql: str, params: Sequence[Any] | None = None, size: int = 100_000) -> Iterator[pa.RecordBatch]:
        """The result of a query as Arrow record batches of at most ``size`` rows, read as they are consumed."""
        with self._cursor() as cur:
            yield from cur.execute(sql, params or []).to_arrow_reader(size)

    def lake_cells(self, table: str) -> list[tuple[str, str, str]]:
        """Every cell of lake table ``table``: (cell, the fingerprint of its rows, SQL selecting its rows)."""
        if self.location.is_lake:
            return [(cell, fingerprint, f"SELECT * EXCLUDE (cell) FROM {table}{CELLS_SUFFIX} WHERE cell = '"
                     + cell.replace("'", "''") + "'") for cell, fingerprint in self.query(
                f"SELECT cell, any_value(fingerprint) FROM {table}{CELLS_SUFFIX} GROUP BY cell ORDER BY cell")]
        return [(cell, fingerprint, self._shards_select(table, paths)) for cell, fingerprint, paths in self.query(
            "SELECT cell, any_value(fingerprint), list(path ORDER BY path) FROM lake_shards WHERE table_name = ?"
            " GROUP BY cell ORDER BY cell", [table])]

    def query_dicts(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        names, rows = self.query_with_columns(sql, params)
        return [dict(zip(names, row)) for row in rows]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    @property
    def warehouse_id(self) -> str:
        return str(self.scalar("SELECT warehouse_id FROM warehouse_info"))

    def snapshot(self) -> int | None:
        """The DuckLake snapshot this warehouse reads now (its ``as_of``, or the latest); None when embedded, which
        keeps no snapshots. A result that names it can be read again as it was (``--as-of``)."""
        if not self.location.is_lake:
            return None
        if self.as_of is not None:
            return self.as_of
        with self._cursor() as cur:
            return self._db.snapshot(cur)

    def pinned(self) -> Warehouse:
        """This warehouse held at the snapshot it reads now, so that every read of a result (a leaderboard, a report,
        what an MLflow run logs) sees one state, which the result names; the embedded warehouse, which keeps no
        snapshots, and a warehouse already read at one, are returned as they are."""
        snapshot = self.snapshot()
        if snapshot is None or self.as_of is not None:
            return self
        return self.at(snapshot)

    @contextmanager
    def frozen(self) -> Iterator[Warehouse]:
        """This warehouse at one state for the block: a DuckLake at its current snapshot (:meth:`pinned`); the
        embedded file held by this process meanwhile (other processes wait for it, as for any operation)."""
        if self.location.is_lake:
            yield self.pinned()
            return
        with self._db.session(self.read_only):
            yield self

    def at(self, snapshot: int) -> Warehouse:
        """This warehouse as it was at ``snapshot``, read-only (an embedded one refuses: it keeps no snapshots)."""
        return Warehouse(self.home, as_of=snapshot, location=self.location)

    # -- writing -----------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One atomic write: everything inside commits together or not at all.

        On a DuckLake the block's calls are recorded and replayed if its commit conflicts with another writer's
        (:mod:`tasks.warehouse.replay`); inside :meth:`cell_commit` the block joins the cell's transaction.
        """
        if not self.location.is_lake:
            with self._db.write_lock, self._cursor() as cur:
                cur.execute("BEGIN TRANSACTION")
                try:
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            return
        if self.read_only:
            raise BabelbenchError(f"{self.location.url}: a write through a read-only warehouse")
        cell = self._own_cell()
        if cell is not None:
            yield self._cell_recorder(cell)
            return
        cur = self._db.cursor()
        try:
            cur.execute("BEGIN TRANSACTION")
            recorder = Recorder(cur, self._claim)
            try:
                yield recorder
            except BaseException:
                rollback(cur)
                raise
            commit_with_replays(cur, recorder.calls, "a warehouse write")
        finally:
            cur.close()

    @contextmanager
    def cell_commit(self, what: str) -> Iterator[None]:
        """Everything this thread writes inside the block commits in one transaction at its end (on a DuckLake).

        A stage cell's outputs, its issues and its ``artifacts`` row are one commit, guarded so that it conflicts
        with every concurrent commit of a cell's outcome: of two workers computing the same cell, the later commit
        is replayed after the earlier one and replaces its rows, leaving one result. A kill before the commit
        leaves the previous state. On the embedded warehouse, whose writers take turns at the file, the block's
        transactions commit one by one as before. Raises :class:`tasks.warehouse.replay.StaleReads` when a replay
        read something another writer changed: the cell must be computed again.
        """
        if not self.location.is_lake or self._own_cell() is not None:
            yield
            return
        cell = _Cell(self, threading.get_ident(), what)
        token = _cell.set(cell)
        try:
            yield
        except BaseException:
            if cell.recorder is not None:
                rollback(cell.recorder.cursor)
            raise
        else:
            recorder = self._cell_recorder(cell)
            commit_with_replays(recorder.cursor, recorder.calls, what)
        finally:
            _cell.reset(token)
            if cell.recorder is not None:
                cell.recorder.cursor.close()

    def _own_cell(self) -> _Cell | None:
        """The cell transaction this thread opened on this warehouse, if any (threads it starts write on their own)."""
        cell = _cell.get()
        if cell is not None and cell.warehouse._db is self._db and cell.thread == threading.get_ident():
            return cell
        return None

    def _cell_recorder(self, cell: _Cell) -> Recorder:
        if cell.recorder is None:
            cur = self._db.cursor()
            cur.execute("BEGIN TRANSACTION")
            cell.recorder = Recorder(cur, self._claim)
            guard(cell.recorder, ARTIFACTS_GUARD)
        return cell.recorder

    def _claim(self, name: str) -> None:
        """Make sure guard ``name`` has a row (its own commit; two claimers leave two rows, which is harmless: a
        guarded commit deletes every row of its guard and writes one)."""
        with self._cursor(fresh=True) as cur:
            if cur.execute("SELECT count(*) FROM commit_guards WHERE name = ?", [name]).fetchone()[0]:
                return
            cur.execute("BEGIN TRANSACTION")
            recorder = Recorder(cur, self._claim)
            recorder.execute("INSERT INTO commit_guards VALUES (?, now())", [name])
            commit_with_replays(cur, recorder.calls, f"guard {name}")

    def replace_cell(self, table: str, cell: str, fingerprint: str, shards: Sequence[Shard]) -> None:
        """Make ``shards`` the current content of ``table`` for ``cell``, atomically.

        The catalog switch and the view rebuild share one transaction; the
        previous shards' files are deleted only after it commits.
        """
        self.replace_cells([(table, cell, fingerprint, shards)])

    def replace_cells(self, changes: Sequence[tuple[str, str, str, Sequence[Shard]]],
                      write: Callable[[Any], None] = lambda _cur: None) -> None:
        """:meth:`replace_cell` for several (table, cell, fingerprint, shards) at once, with ``write`` (a function
        of the cursor: the other tables' rows) in one transaction: an import that fills several tables and cells
        is visible whole or not at all.

        On a DuckLake the shards' rows are copied into the table (its ``__cells`` table) in that transaction, and
        the shards, staged, are deleted when the stage's writes settle.
        """
        if self.location.is_lake:
            with self.transaction() as cur:
                write(cur)
                for table, cell, _fingerprint, shards in changes:
                    cur.execute(f"DELETE FROM {table}{CELLS_SUFFIX} WHERE cell = ?", [cell])
                    if shards:
                        listing = sql_paths(duckdb_path(self.lake_root / s.path) for s in shards)
                        cur.execute(f"INSERT INTO {table}{CELLS_SUFFIX} BY NAME SELECT *, ? AS cell"
                                    f" FROM read_parquet([{listing}], union_by_name = true)", [cell])
            return
        old: list[str] = []
        with self.transaction() as cur:
            write(cur)
            for table, cell, fingerprint, shards in changes:
                old += [r[0] for r in cur.execute(
                    "SELECT path FROM lake_shards WHERE table_name = ? AND cell = ?", [table, cell]).fetchall()]
                cur.execute("DELETE FROM lake_shards WHERE table_name = ? AND cell = ?", [table, cell])
                if shards:
                    cur.executemany(
                        "INSERT INTO lake_shards VALUES (?, ?, ?, ?, ?, now())",
                        [[table, cell, fingerprint, s.path, s.rows] for s in shards],
                    )
            for table in sorted({table for table, *_ in changes}):
                self._create_lake_view(cur, table)
        keep = {s.path for *_, shards in changes for s in shards}
        self._db.retire([self.lake_root / rel for rel in old if rel not in keep])

    def retiring_folders(self) -> set[str]:
        """Folders of superseded shards that a query of this process may still be reading (see ``_Database.retire``);
        a sweep leaves them to that mechanism."""
        return self._db.retiring_folders()

    def refresh_views(self) -> None:
        """Rebuild every lake view from the catalog, then the named views in ``sql/views``."""
        with self.transaction() as cur:
            for table in LAKE_TABLES:
                self._create_lake_view(cur, table)
            for name, sql in named_views():
                try:
                    cur.execute(sql)
                except duckdb.Error as exc:
                    raise BabelbenchError(f"sql/views/{name}: {exc}") from exc

    def close(self) -> None:
        """Release the DuckDB file now if no operation of this process is using it (it is reopened when needed)."""
        self._db.close_idle()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------
    @contextmanager
    def _cursor(self, fresh: bool = False) -> Iterator[Any]:
        """A cursor private to the calling thread, for one operation: on the embedded file, the file is held (and
        locked) meanwhile; on a DuckLake, inside this thread's cell transaction once it began (unless ``fresh``)."""
        if self.location.is_lake:
            cell = None if fresh else self._own_cell()
            if cell is not None and cell.recorder is not None:
                yield cell.recorder
                return
            cur = self._db.cursor(self.as_of)
            try:
                yield cur
            finally:
                cur.close()
            return
        with self._db.session(self.read_only) as con:
            cur = con.cursor()
            try:
                yield cur
            finally:
                cur.close()

    def _open_lake(self, cur: duckdb.DuckDBPyConnection) -> Any:
        """The warehouse's lake, from its recorded location; a lake off this machine's filesystem has its fsspec
        filesystem registered with DuckDB. (A warehouse opened read-only before migration 015 has no ``lake``
        column: its lake is the home's.)"""
        result = cur.execute("SELECT * FROM warehouse_info")
        names = [d[0] for d in result.description]
        root = locate_lake(self.home, dict(zip(names, result.fetchone())).get("lake"), self.location.lake)
        if root.protocol not in LOCAL_PROTOCOLS:
            self._db.use_filesystem(root.fs)
        return root

    def _prepare_lake(self, new_lake: str | None, references: Mapping[str, Reference]) -> None:
        """Bring a DuckLake's schema up to date: migrations, lake tables, references, views, each only when it
        changed (every process opens it; a change made at once by two of them conflicts, and is tried again)."""
        for attempt in range(1, SCHEMA_ATTEMPTS + 1):
            cur = self._db.cursor()
            try:
                if any(m.version == 1 for m in apply_migrations(cur, dialect=for_ducklake)):
                    # the lake is recorded by URL: the machines sharing a DuckLake share no home
                    lake = new_lake or lake_url(str(self.home / "lake"))
                    cur.execute("UPDATE warehouse_info SET lake = ?", [lake])
                self.lake_root = self._open_lake(cur)
                self._lake_tables(cur)
                self._mirror(references)
                self._lake_views(cur)
                return
            except duckdb.Error as exc:
                # a conflict at commit, or an object another process created after this one looked
                raced = is_conflict(exc) or (isinstance(exc, duckdb.CatalogException) and "already exists" in str(exc))
                if not raced or attempt == SCHEMA_ATTEMPTS:
                    raise
                log.info("%s: another process changed the schema at the same time; reading it again", self.path)
            finally:
                cur.close()

    def _lake_tables(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Each lake table as a DuckLake table with its cell, and every column its schema has (added if missing)."""
        for table, schema in LAKE_TABLES.items():
            name = table + CELLS_SUFFIX
            columns = {row[0] for row in cur.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()"
                " AND table_name = ?", [name]).fetchall()}
            empty = f"_schema_{threading.get_ident()}"
            cur.register(empty, schema.empty_table())
            try:
                if not columns:
                    cur.execute(f"CREATE TABLE IF NOT EXISTS {name} AS SELECT *, CAST(NULL AS VARCHAR) AS cell FROM {empty} LIMIT 0")
                    continue
                types = dict(cur.execute(f"SELECT column_name, column_type FROM (DESCRIBE {empty})").fetchall())
                for column in schema.names:
                    if column not in columns:
                        cur.execute(f'ALTER TABLE {name} ADD COLUMN "{column}" {types[column]}')
            finally:
                cur.unregister(empty)

    def _lake_views(self, cur: duckdb.DuckDBPyConnection) -> None:
        """The lake views and the named views, each (re)made only when its SQL changed: its digest is its comment."""
        views = [(table, f"CREATE OR REPLACE VIEW {table} AS SELECT * EXCLUDE (cell) FROM {table}{CELLS_SUFFIX}")
                 for table in LAKE_TABLES]
        views += [(name.split("_", 1)[1].removesuffix(".sql"), sql) for name, sql in named_views()]
        stored = dict(cur.execute("SELECT view_name, comment FROM duckdb_views() WHERE database_name ="
                                  " current_database() AND NOT internal").fetchall())
        changed = [(name, sql) for name, sql in views if stored.get(name) != _digest(sql)]
        if not changed:
            return
        cur.execute("BEGIN TRANSACTION")
        try:
            for name, sql in changed:
                try:
                    cur.execute(sql)
                except duckdb.Error as exc:
                    raise BabelbenchError(f"view {name}: {exc}") from exc
                cur.execute(f"COMMENT ON VIEW {name} IS '{_digest(sql)}'")
            cur.execute("COMMIT")
        except BaseException:
            rollback(cur)
            raise

    def _create_lake_view(self, cur: duckdb.DuckDBPyConnection, table: str) -> None:
        """A view over the table's shards (:meth:`_shards_select`)."""
        paths = [r[0] for r in cur.execute("SELECT path FROM lake_shards WHERE table_name = ? ORDER BY cell, path",
                                           [table]).fetchall()]
        cur.execute(f"CREATE OR REPLACE VIEW {table} AS {self._shards_select(table, paths)}")

    def _shards_select(self, table: str, paths: Sequence[str]) -> str:
        """SQL reading the table's shards at ``paths`` (relative to the lake); the empty shard (the current schema)
        comes first, and shards written before a column was added read NULL in it (``union_by_name``)."""
        files = [duckdb_path(empty_shard(self.lake_root, table))] + [duckdb_path(self.lake_root / p) for p in paths]
        return f"SELECT * FROM read_parquet([{sql_paths(files)}], union_by_name = true)"

    def _mirror(self, references: Mapping[str, Reference]) -> None:
        """Replace each reference table whose stored digest (the table's comment) is not the given one (one
        transaction)."""
        if not references:
            return
        with self._cursor(fresh=True) as cur:
            stale = {name: reference for name, reference in references.items()
                     if (stored := cur.execute("SELECT comment FROM duckdb_tables() WHERE table_name = ? AND"
                                               " schema_name = current_schema() AND database_name = current_database()",
                                               [name]).fetchone()) is None or stored[0] != reference.digest}
        if not stale:
            return
        with self.transaction() as cur:
            for name, reference in stale.items():
                view = f"_reference_{threading.get_ident()}"
                cur.register(view, reference.rows())
                try:
                    cur.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {view}")
                    cur.execute(f"COMMENT ON TABLE {name} IS '{reference.digest}'")
                finally:
                    cur.unregister(view)


def snapshot_label(snapshot: int | None) -> str:
    """How a result names the warehouse snapshot it read: its number (read again with ``--as-of``), or that the
    embedded warehouse keeps none."""
    return str(snapshot) if snapshot is not None else "none (the embedded warehouse keeps no snapshots)"


def cli_prefix(wh: Warehouse, program: str = "babelbench") -> str:
    """The command line (``program``) that reaches this warehouse (its home, and its URL when it is a DuckLake), for
    the commands a summary suggests."""
    where = f" --warehouse '{wh.location.url}'" if wh.location.is_lake else ""
    return f"{program} --home {wh.home}{where}"


def _digest(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()[:16]


def sql_paths(paths: Any) -> str:
    """A SQL list literal of file paths."""
    return ", ".join("'" + p.replace("'", "''") + "'" for p in paths)


def _has_table(cur: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND database_name ="
                            " current_database()", [name]).fetchone()[0])


def guard(cur: Any, name: str) -> None:
    """On a DuckLake, make this transaction conflict with every concurrent one that takes guard ``name``: each
    deletes the guard's rows and writes one, so the later commit is refused and replayed on the earlier one's result
    (what a key or the file lock gives the embedded warehouse, which needs nothing here)."""
    if isinstance(cur, Recorder):
        cur.guard(name)


def _arrow_rows(cur: Any, rows: Sequence[Sequence[Any]]) -> tuple[str, Callable[[], None]]:
    """Register ``rows`` (a list of row tuples) as an Arrow table with columns c0, c1, …; returns its name and the
    function that unregisters it."""
    columns = {f"c{n}": pa.array(list(values)) for n, values in enumerate(zip(*rows, strict=True))}
    name = f"_rows_{threading.get_ident()}"
    cur.register(name, pa.table(columns))
    return name, lambda: cur.unregister(name)


def insert_rows(cur: Any, table: str, rows: Sequence[Sequence[Any]], *, replace: bool = False, then: str = "",
                columns: Sequence[str] | None = None) -> None:
    """Insert ``rows`` (each the table's leading columns in order, or the named ``columns``; ``then`` is SQL for any
    remaining ones, such as ``now()``) in one statement over an Arrow table; ``replace``: an upsert on the table's key
    (:func:`upsert`, by position).

    DuckDB's ``executemany`` runs the statement once per row — about a millisecond each, which made storing a
    cell's responses a visible share of an evaluation; one ``INSERT … SELECT`` over Arrow columns takes a few.
    Column types are inferred by Arrow; a column with no value at all is NULL and cast by DuckDB on insert.
    """
    if not rows:
        return
    if replace:
        upsert(cur, table, rows, then=then)
        return
    name, unregister = _arrow_rows(cur, rows)
    try:
        extra = f", {then}" if then else ""
        into = f"{table} ({', '.join(columns)})" if columns is not None else table
        cur.execute(f"INSERT INTO {into} SELECT *{extra} FROM {name}")
    finally:
        unregister()


def upsert(cur: Any, table: str, rows: Sequence[Sequence[Any]], *, then: str = "") -> None:
    """Insert ``rows`` or replace the rows with the same key (the table's primary key in ``sql/``): a MERGE, which
    both backends run, guarded on a DuckLake so that two writers of one new key leave one row. ``rows`` as for
    :func:`insert_rows`; two rows of one key in ``rows`` are an error, as they were for the key."""
    if not rows:
        return
    key = key_of(table)
    guard(cur, table)
    columns = [d[0] for d in cur.execute(f"SELECT * FROM {table} LIMIT 0").description]
    width = len(rows[0])
    values = [f"c{n} AS \"{column}\"" for n, column in enumerate(columns[:width])]
    if then:
        values.append(then)
    name, unregister = _arrow_rows(cur, rows)
    try:
        on = " AND ".join(f'{table}."{k}" IS NOT DISTINCT FROM s."{k}"' for k in key)
        cur.execute(f"MERGE INTO {table} USING (SELECT {', '.join(values)} FROM {name}) AS s ON ({on})"
                    " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    finally:
        unregister()
