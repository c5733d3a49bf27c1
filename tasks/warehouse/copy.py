"""Copying a warehouse into another — the embedded DuckDB file into a DuckLake, or back — checked table by table.

``babelbench warehouse copy --to URL`` moves a home's warehouse to a DuckLake (or a DuckLake's into a home). The
source is read at one snapshot: a DuckLake's latest when the copy starts, the embedded file as it is (its writers
take turns at it), so writers may go on meanwhile. The target must hold no data, and everything lands in it in one
transaction: a copy that stops part-way leaves it as it was. Then each copied table's row count and content digest
(:mod:`tasks.warehouse.digest`) are compared on both sides.

Ordinary tables travel as Parquet files staged in a scratch folder; a lake table travels cell by cell as shards in
the target's lake (what its stages write), which the embedded target lists in its shard catalog and a DuckLake
copies in. Not copied, because each warehouse has its own: ``warehouse_info`` (identity, creation time, lake),
``schema_migrations`` (the target applies the same migrations when it opens; their versions and checksums must be
the source's), the mirrored ``language_rules``, a DuckLake's ``commit_guards`` and the embedded file's shard
catalog ``lake_shards`` (how each backend keeps a lake table, whose rows are copied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.errors import ConfigError
from tasks.warehouse import digest
from tasks.warehouse.db import CELLS_SUFFIX, Warehouse, sql_paths
from tasks.warehouse.lake import LAKE_TABLES, Shard, cell_dir, settled_writes, write_parquet_atomic

#: each warehouse's own tables, never copied (see the module notes)
OWN_TABLES = frozenset({"warehouse_info", "schema_migrations", "language_rules", "commit_guards", "lake_shards"})


@dataclass(frozen=True)
class TableCopy:
    """One copied table: its digest in the source and in the target."""

    table: str
    source: digest.Digest
    target: digest.Digest

    @property
    def equal(self) -> bool:
        return self.source == self.target


def copied_tables(wh: Warehouse) -> list[str]:
    """The tables a copy carries: every base table but the warehouse's own and the lake tables' storage, then the
    lake tables (through their views), by name."""
    base = [name for (name,) in wh.query("SELECT table_name FROM information_schema.tables WHERE table_schema ="
                                         " 'main' AND table_type = 'BASE TABLE' ORDER BY table_name")]
    return [t for t in base if t not in OWN_TABLES and not t.endswith(CELLS_SUFFIX) and t not in LAKE_TABLES]


def copy_warehouse(source: Warehouse, target: Warehouse, staging: Path) -> tuple[int | None, list[TableCopy]]:
    """Copy ``source`` (held at one state: :meth:`Warehouse.frozen`) into the empty ``target`` in one transaction,
    staging ordinary tables' rows under ``staging``; returns the snapshot read (None: embedded) and each table's
    digests."""
    with source.frozen() as frozen:
        _check_schemas(frozen, target)
        tables = copied_tables(frozen)
        _check_empty(target, [*tables, *LAKE_TABLES])
        with settled_writes(target, "warehouse copy"):
            staged = {table: _stage(frozen, table, staging / table) for table in tables}
            cells = [(table, cell, fingerprint, _write_cell(frozen, target, table, cell, fingerprint, sql))
                     for table in LAKE_TABLES for cell, fingerprint, sql in frozen.lake_cells(table)]

            def insert(cur: Any) -> None:
                for table, files in staged.items():
                    if files:
                        cur.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet([{sql_paths(files)}])")

            target.replace_cells(cells, insert)
        return frozen.snapshot(), compare(frozen, target, [*tables, *LAKE_TABLES])


def compare(source: Warehouse, target: Warehouse, tables: Sequence[str]) -> list[TableCopy]:
    """Each table's digest in ``source`` and in ``target``."""
    return [TableCopy(table, digest.query_digest(source, f"SELECT * FROM {table}"),
                      digest.query_digest(target, f"SELECT * FROM {table}")) for table in tables]


def _check_schemas(source: Warehouse, target: Warehouse) -> None:
    """Both warehouses at the same migrations (each brought up to date when opened); a clear error otherwise."""
    sql = "SELECT version, name, checksum FROM schema_migrations ORDER BY version"
    mine, theirs = source.query(sql), target.query(sql)
    if mine != theirs:
        raise ConfigError(f"{source.path} is at migration {mine[-1][0] if mine else 0} and {target.path} at"
                          f" {theirs[-1][0] if theirs else 0}, or their migrations differ: open both with the same"
                          " babelbench version before copying")


def _check_empty(target: Warehouse, tables: Sequence[str]) -> None:
    """Refuse a target that already holds rows in a table the copy writes, naming them."""
    held = [(table, n) for table in tables if (n := target.scalar(f"SELECT count(*) FROM {table}"))]
    if held:
        raise ConfigError(f"{target.path} already holds data ({', '.join(f'{t}: {n} rows' for t, n in held[:5])}"
                          f"{' …' if len(held) > 5 else ''}): a copy goes into an empty warehouse")


def _stage(source: Warehouse, table: str, folder: Path) -> list[str]:
    """The table's rows as Parquet files in ``folder`` (none for an empty table): their paths."""
    files: list[str] = []
    for batch in source.arrow_batches(f"SELECT * FROM {table}"):
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"part-{len(files):05d}.parquet"
        pq.write_table(pa.Table.from_batches([batch]), path)
        files.append(str(path))
    return files


def _write_cell(source: Warehouse, target: Warehouse, table: str, cell: str, fingerprint: str, sql: str) -> list[Shard]:
    """One cell of a lake table as shards in the target's lake, with the rows' own fingerprints."""
    schema = LAKE_TABLES[table]
    directory = cell_dir(target.lake_root, table, cell, fingerprint)
    shards = []
    for batch in source.arrow_batches(sql):
        rows = pa.Table.from_batches([batch]).select(schema.names).cast(schema)
        path = directory / f"part-{len(shards):05d}.parquet"
        write_parquet_atomic(rows, path)
        shards.append(Shard(str(path.relative_to(target.lake_root)), rows.num_rows))
    return shards
