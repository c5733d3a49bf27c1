"""The warehouse: one DuckDB file plus the Parquet lake beside it.

Only the flow process opens the DuckDB file for writing (DuckDB allows one
writer process); threads of that process share one connection through
cursors, and writes are serialised by a lock so stage tasks running
concurrently in threads never conflict.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import duckdb

from tasks.errors import BabelbenchError
from tasks.text.languages import all_rules
from tasks.warehouse.lake import LAKE_TABLES, Shard, empty_shard
from tasks.warehouse.migrations import apply_migrations, named_views

log = logging.getLogger(__name__)

WAREHOUSE_FILE = "warehouse.duckdb"


class WarehouseBusyError(BabelbenchError):
    """Another process holds the DuckDB file (a flow run, or a second CLI)."""


class Warehouse:
    """An open warehouse under ``home``: migrations applied, views current."""

    def __init__(self, home: Path, *, read_only: bool = False) -> None:
        self.home = home
        self.path = home / WAREHOUSE_FILE
        self.lake_root = home / "lake"
        self.read_only = read_only
        self._lock = threading.RLock()
        if read_only and not self.path.exists():
            raise BabelbenchError(f"no warehouse at {self.path}; run `babelbench corpus ingest` or `babelbench demo` first")
        home.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise BabelbenchError(f"cannot open {self.path}: {exc}") from exc
            raise WarehouseBusyError(
                f"cannot open {self.path}: {exc}. Another process (a running flow?) holds it; "
                "wait for it to finish or use another --home"
            ) from exc
        if not read_only:
            apply_migrations(self._con)
            self._load_language_rules()
            self.refresh_views()

    # -- reading -----------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple]:
        """Rows of a query, from a cursor private to the calling thread."""
        with self._cursor() as cur:
            return cur.execute(sql, params or []).fetchall()

    def query_with_columns(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Column names and rows (names are known even when there are no rows)."""
        with self._cursor() as cur:
            result = cur.execute(sql, params or [])
            names = [d[0] for d in result.description] if result.description else []
            return names, result.fetchall()

    def query_dicts(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        names, rows = self.query_with_columns(sql, params)
        return [dict(zip(names, row)) for row in rows]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    @property
    def warehouse_id(self) -> str:
        return str(self.scalar("SELECT warehouse_id FROM warehouse_info"))

    # -- writing -----------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One atomic write: everything inside commits together or not at all."""
        with self._lock, self._cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def replace_cell(self, table: str, cell: str, fingerprint: str, shards: Sequence[Shard]) -> None:
        """Make ``shards`` the current content of ``table`` for ``cell``, atomically.

        The catalog switch and the view rebuild share one transaction; the
        previous shards' files are deleted only after it commits.
        """
        self.replace_cells([(table, cell, fingerprint, shards)])

    def replace_cells(self, changes: Sequence[tuple[str, str, str, Sequence[Shard]]],
                      statements: Sequence[tuple[str, Sequence[Any]]] = ()) -> None:
        """:meth:`replace_cell` for several (table, cell, fingerprint, shards) at once, and ``statements``
        (SQL, parameters) on the DuckDB tables, in one transaction: an import that fills several tables and
        cells is visible whole or not at all."""
        old: list[str] = []
        with self.transaction() as cur:
            for sql, parameters in statements:
                cur.execute(sql, parameters)
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
        for rel in old:
            if rel not in keep:
                (self.lake_root / rel).unlink(missing_ok=True)

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
        self._con.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------
    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self._con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def _create_lake_view(self, cur: duckdb.DuckDBPyConnection, table: str) -> None:
        paths = [str(empty_shard(self.lake_root, table))]
        paths += [str(self.lake_root / r[0]) for r in cur.execute(
            "SELECT path FROM lake_shards WHERE table_name = ? ORDER BY cell, path", [table]).fetchall()]
        listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
        cur.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet([{listing}])")

    def _load_language_rules(self) -> None:
        """Mirror the language-rules CSV into the ``language_rules`` table for SQL joins."""
        rows = [asdict(rule) | {"disambiguation_markers": list(rule.disambiguation_markers)} for rule in all_rules().values()]
        with self.transaction() as cur:
            cur.execute(
                "CREATE OR REPLACE TABLE language_rules (lang VARCHAR PRIMARY KEY, name VARCHAR, wiki VARCHAR, script VARCHAR,"
                " segmenter VARCHAR, sentence_terminators VARCHAR, truncate_unit VARCHAR, truncate_limit INTEGER,"
                " analyzer VARCHAR, stemmer VARCHAR, disambiguation_markers VARCHAR[])"
            )
            cur.executemany(
                "INSERT INTO language_rules VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [list(r.values()) for r in rows],
            )
