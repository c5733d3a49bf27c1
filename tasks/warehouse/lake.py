"""Parquet shards in the lake — the bulk of the warehouse.

The lake is ``$BABELBENCH_HOME/lake`` or the fsspec URL or path ``BABELBENCH_LAKE`` named when the warehouse
was created (:func:`locate_lake`); every operation goes through its :class:`~upath.UPath`, so Dask workers
on other machines write to the lake the flow process registers, with fsspec's own credentials.  Workers
write shards (:class:`ShardWriter`) and never touch the DuckDB file.  Each write attempt gets a fresh folder
marked with its writer (:func:`cell_dir`), settled when the stage's compute ends (:func:`settle_writes`) or
swept once its writer died (:func:`sweep_abandoned`), so a killed run leaves no orphan shard.

See ``docs/warehouse.md``, "The lake on an fsspec URL".
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from tasks.errors import BabelbenchError, ConfigError
from tasks.warehouse import writers

log = logging.getLogger(__name__)

FINGERPRINT_FIELD = pa.field("fingerprint", pa.string())


def _with_fingerprint(schema: pa.Schema) -> pa.Schema:
    return schema.append(FINGERPRINT_FIELD)


#: what every dump parser yields, whatever the input format (tasks/dumps/records.py)
DOCUMENT_SCHEMA = pa.schema(
    [
        ("lang", pa.string()),
        ("page_id", pa.int64()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("qid", pa.string()),  # Wikidata item id ("Q42"), null when unknown
        ("namespace", pa.int32()),
        ("is_redirect", pa.bool_()),
        ("redirect_target", pa.string()),  # null unless is_redirect
        ("is_disambiguation", pa.bool_()),
        ("timestamp", pa.string()),  # ISO-8601 of the revision / index time, null when unknown
        ("source", pa.string()),  # file name the row came from
        ("revision_id", pa.int64()),  # the revision the text is of; null when unknown (shards written before it)
    ]
)

SITELINK_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("lang", pa.string()),
        ("page_id", pa.int64()),  # null when the source gives only a title (Wikidata JSON)
        ("title", pa.string()),
        ("source", pa.string()),
        # the page is a disambiguation page by a language-independent signal: the page property MediaWiki's
        # Disambiguator sets, or a Wikidata item that is an instance of Wikimedia disambiguation page (Q4167410)
        ("is_disambiguation", pa.bool_()),
    ]
)

RETRIEVAL_HIT_SCHEMA = pa.schema([
    ("lang", pa.string()), ("query_page_id", pa.int64()), ("rank", pa.int32()), ("doc_page_id", pa.int64()),
    ("score", pa.float64()), ("norm_score", pa.float64()), ("label", pa.int8()),
])
CLIR_QREL_SCHEMA = pa.schema([
    ("collection", pa.string()), ("src_lang", pa.string()), ("tgt_lang", pa.string()), ("split", pa.string()),
    ("query_id", pa.int64()), ("doc_id", pa.int64()), ("label", pa.int8()), ("is_pad", pa.bool_()),
])
RANKING_SCHEMA = pa.schema([
    ("eval_id", pa.string()), ("src_lang", pa.string()), ("tgt_lang", pa.string()), ("query_id", pa.int64()),
    ("doc_id", pa.int64()), ("rank", pa.int32()), ("score", pa.float64()),
])

# Lake-backed tables: name -> schema of their rows (plus the producing fingerprint).
LAKE_TABLES: Mapping[str, pa.Schema] = {
    "documents_raw": _with_fingerprint(DOCUMENT_SCHEMA),
    "sitelinks": _with_fingerprint(SITELINK_SCHEMA),
    "retrieval_hits": _with_fingerprint(RETRIEVAL_HIT_SCHEMA),
    "clir_qrels": _with_fingerprint(CLIR_QREL_SCHEMA),
    "rankings": _with_fingerprint(RANKING_SCHEMA),
}

_UNSAFE = re.compile(r"[^A-Za-z0-9_.=-]+")

LAKE_ENV = "BABELBENCH_LAKE"
#: fsspec protocols of this machine's own filesystem: DuckDB reads their shards by plain path
LOCAL_PROTOCOLS = frozenset({"", "file", "local"})


def lake_url(location: str) -> str:
    """The one string that names a lake location (a URL or a path), to record and compare.

    A local location becomes ``file://`` plus its absolute path (not resolved through symlinks: machines sharing
    a mount may reach it through different links); any other URL is kept as given. A URL carrying a password is
    refused without repeating it: credentials belong in fsspec's configuration, never in the warehouse.
    """
    if urlsplit(location).password:
        raise ConfigError(f"{LAKE_ENV}: the URL carries a password; give credentials through fsspec's configuration "
                          "(environment variables, an fsspec config file) instead")
    root = UPath(location)
    if root.protocol in LOCAL_PROTOCOLS:
        return "file://" + os.path.abspath(os.path.expanduser(root.path))
    return location.rstrip("/")


def _home_lake(home: Path) -> Path:
    return home / "lake"


def _configured() -> str:
    return os.environ.get(LAKE_ENV, "").strip()


def configured_lake(home: Path, given: str | None = None) -> str | None:
    """The lake a new warehouse under ``home`` records: ``given``'s (else ``BABELBENCH_LAKE``'s) URL, or None for
    the home's own ``lake`` folder (kept relative, so the home can move)."""
    configured = given if given is not None else _configured()
    if not configured or lake_url(configured) == lake_url(str(_home_lake(home))):
        return None
    return lake_url(configured)


def locate_lake(home: Path, recorded: str | None, given: str | None = None) -> UPath:
    """The lake of the warehouse under ``home`` (``recorded``: its location, None for the home's ``lake`` folder).

    Catalog paths are relative to the lake, so a ``BABELBENCH_LAKE`` (or ``given`` lake) naming another location
    is an error rather than a switch that would leave every view pointing at missing files.
    """
    default = _home_lake(home)
    configured = given if given is not None else _configured()
    if configured and lake_url(configured) != lake_url(recorded or str(default)):
        raise BabelbenchError(
            f"{LAKE_ENV}={configured} names another lake than the one the warehouse in {home} was created with"
            f" ({recorded or default}): its catalog lists shards relative to that lake. Unset {LAKE_ENV}, or set it"
            " to the warehouse's lake.")
    return UPath(recorded) if recorded else UPath(default)


def duckdb_path(path: UPath) -> str:
    """How DuckDB names ``path`` in a view: a local file by its plain path (DuckDB's own reader), any other by its
    URL, read through the fsspec filesystem registered on every connection of the warehouse."""
    return path.path if path.protocol in LOCAL_PROTOCOLS else str(path)


def remove(paths: Iterable[UPath], *, recursive: bool = False) -> None:
    """Delete files (or, ``recursive``, folders) through their filesystem.

    Only garbage is deleted here (superseded shards, abandoned folders): one already gone is fine, and a failure
    is logged rather than raised, since a stage that published its results must not fail for it.
    """
    for path in paths:
        try:
            path.fs.rm(path.path, recursive=recursive)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not delete %s: %s", path, exc)


@dataclass(frozen=True)
class Shard:
    """One written Parquet file; ``path`` is relative to the lake root."""

    path: str
    rows: int


#: the folders made by :func:`cell_dir` inside the current :func:`track_writes` scope
_written: contextvars.ContextVar[list[UPath] | None] = contextvars.ContextVar("lake_written", default=None)


def cell_dir(lake_root: Path | UPath, table: str, cell: str, fingerprint: str) -> UPath:
    """A fresh directory for one stage run's shards of one cell, created with this process's writer marker.

    The random suffix keeps a forced recompute (same fingerprint) from writing
    over the files the current view still reads.
    """
    safe_cell = _UNSAFE.sub("_", cell) or "_"
    directory = writers.claim(UPath(lake_root) / table / safe_cell / f"{fingerprint[:16]}-{uuid.uuid4().hex[:8]}")
    written = _written.get()
    if written is not None:
        written.append(directory)
    return directory


@contextmanager
def track_writes() -> Iterator[list[UPath]]:
    """Collect the folders :func:`cell_dir` makes in this scope (a stage's compute), for :func:`settle_writes`."""
    written: list[UPath] = []
    token = _written.set(written)
    try:
        yield written
    finally:
        _written.reset(token)


@contextmanager
def settled_writes(wh: Any, what: str) -> Iterator[None]:
    """Settle the write attempts made in this scope when it ends (:func:`settle_writes`), whether it returns or
    raises: a scope that registered its shards leaves no writer marker behind, a failed one no unregistered shard.
    ``what`` names the scope in the log when cleaning up after a failure fails too."""
    with track_writes() as written:
        try:
            yield
        except BaseException:
            try:
                settle_writes(wh, written)  # the attempt's unregistered shards are deleted
            except Exception as cleanup:  # noqa: BLE001 - the scope's own error is the one to report
                log.warning("%s: could not clean up after the failure: %s", what, cleanup)
            raise
        settle_writes(wh, written)  # registered folders lose their writer marker, others go


def _registered_prefix(wh: Any, directory: UPath) -> bool:
    prefix = str(directory.relative_to(wh.lake_root)) + "/"
    return bool(wh.scalar("SELECT count(*) FROM lake_shards WHERE starts_with(path, ?)", [prefix]))


def settle_writes(wh: Any, directories: Iterable[UPath]) -> None:
    """End write attempts: a folder the catalog lists shards of is published (its marker goes); any other is
    deleted with what was written into it (a failed or abandoned attempt that no view reads)."""
    for directory in directories:
        if _registered_prefix(wh, directory):
            writers.release(directory)
        else:
            remove([directory], recursive=True)


def _subfolders(folder: UPath) -> Iterator[UPath]:
    return (entry for entry in folder.iterdir() if entry.is_dir())


def sweep_abandoned(wh: Any) -> list[UPath]:
    """Delete the shard folders that no catalog row lists and nobody will finish (their writer died, see
    :func:`tasks.warehouse.writers.abandoned`); drop the markers dead writers left on registered ones.
    Returns the folders deleted."""
    lake_root: UPath = wh.lake_root
    if not lake_root.is_dir():
        return []
    listed = {str(Path(path).parent) for (path,) in wh.query("SELECT path FROM lake_shards")}
    retiring = wh.retiring_folders()
    deleted = []
    for table in _subfolders(lake_root):
        if table.name not in LAKE_TABLES:
            continue  # only the catalogued tables: other folders of the lake (an embedding cache …) are not shards
        for cell in _subfolders(table):
            for directory in _subfolders(cell):
                if f"{table.name}/{cell.name}/{directory.name}" in listed:
                    if writers.writer_state(directory) == "dead":
                        writers.release(directory)
                elif directory.path not in retiring and writers.abandoned(directory):
                    deleted.append(directory)
    remove(deleted, recursive=True)
    if deleted:
        log.info("removed %d shard folder(s) of runs that died before registering them: %s", len(deleted),
                 ", ".join(str(d.relative_to(lake_root)) for d in deleted[:5]))
    return deleted


def write_atomic(path: UPath, write: Callable[[UPath], None]) -> None:
    """Have ``write`` fill a temp file beside ``path``, then move it to ``path`` with the filesystem's ``mv``.

    Locally the move is a rename, so a reader never sees half a file. On an object store a move is a copy and a
    delete, not atomic; there the publish step that matters is the catalog transaction (a view lists only
    registered shards), and a temp name only keeps a killed writer's object recognisable.
    """
    tmp = _temp_beside(path)
    try:
        write(tmp)
    except BaseException:
        remove([tmp])
        raise
    _move_into_place(tmp, path)


def _temp_beside(path: UPath) -> UPath:
    """A fresh temp name in ``path``'s folder (made if missing), for a file written before it is named."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")


def _move_into_place(tmp: UPath, path: UPath) -> None:
    """Give the finished ``tmp`` its name; if that fails, the temp file goes."""
    try:
        path.fs.mv(tmp.path, path.path)
    except BaseException:
        remove([tmp])
        raise


# Rows at the start of a shard whose values say whether a column repeats enough for a dictionary, and the most
# bytes of a column that are looked at (wide values, an article's text, are sampled over fewer rows).
DICTIONARY_SAMPLE = 4_096
DICTIONARY_SAMPLE_BYTES = 64 << 10


def dictionary_columns(table: pa.Table) -> list[str]:
    """The columns of ``table`` worth dictionary pages: flat ones whose first rows hold at most one distinct value in
    two (nested columns are written plain).

    Parquet writers build a dictionary for every column by default and drop it when it grows too large; for
    columns whose values seldom repeat (scores, the documents of a batch's hits) that work is wasted, and it was
    more than half the write of a retrieval shard (75 against 32 ms for 200,000 hits), for a larger file. A
    column's sample stops at ``DICTIONARY_SAMPLE_BYTES``: hashing 4,096 article texts took a tenth of a
    documents shard's write.
    """
    chosen = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_nested(column.type):
            continue
        sample = column.slice(0, DICTIONARY_SAMPLE)
        if sample.nbytes > DICTIONARY_SAMPLE_BYTES:
            sample = sample.slice(0, max(1, len(sample) * DICTIONARY_SAMPLE_BYTES // sample.nbytes))
        if 2 * pc.count_distinct(sample, mode="all").as_py() <= len(sample):
            chosen.append(name)
    return chosen


def _parquet_options(table: pa.Table) -> dict[str, Any]:
    """How every shard is encoded; the dictionaries are chosen from ``table``, its first rows."""
    return {"compression": "zstd", "use_dictionary": dictionary_columns(table)}


def write_parquet_atomic(table: pa.Table, path: UPath) -> None:
    """Write ``table`` to ``path`` through a temp file and a move (pyarrow writes a local file natively)."""
    write_atomic(path, lambda tmp: pq.write_table(table, tmp.path, filesystem=tmp.fs, **_parquet_options(table)))


@dataclass
class _OpenShard:
    """A shard being written row group by row group, under its temp name until it is closed."""

    path: UPath
    tmp: UPath
    writer: pq.ParquetWriter
    rows: int = 0
    groups: int = 0


class ShardWriter:
    """Buffers row dicts and writes them as numbered Parquet shards.

    Rows get the producing stage's fingerprint as an extra column, so every
    row of a derived table says which stage run made it.
    """

    def __init__(
        self, lake_root: Path | UPath, directory: Path | UPath, schema: pa.Schema, fingerprint: str,
        *, prefix: str = "part", rows_per_shard: int = 100_000, groups_per_shard: int = 8,
    ) -> None:
        self._lake_root = UPath(lake_root)
        self._directory = UPath(directory)
        self._prefix = prefix
        self._schema = schema
        self._fingerprint = fingerprint
        self._rows_per_shard = rows_per_shard
        self._groups_per_shard = groups_per_shard
        self._buffer: list[dict] = []
        self._open: _OpenShard | None = None
        self.shards: list[Shard] = []

    def _next_path(self) -> UPath:
        return self._directory / f"{self._prefix}-{len(self.shards):05d}.parquet"

    def _fingerprinted(self, table: pa.Table) -> pa.Table:
        fingerprints = pa.repeat(pa.scalar(self._fingerprint, pa.string()), table.num_rows)
        return table.append_column(FINGERPRINT_FIELD, fingerprints).cast(self._schema)

    def add_table(self, table: pa.Table) -> None:
        """Write an already columnar batch as one shard (hot paths build columns, not row dicts)."""
        self.flush()
        self.close_shard()
        path = self._next_path()
        write_parquet_atomic(self._fingerprinted(table), path)
        self.shards.append(Shard(str(path.relative_to(self._lake_root)), table.num_rows))

    def add_row_group(self, table: pa.Table) -> None:
        """Append an already columnar batch to the open shard as one row group, opening a shard if none is.

        A producer hands its batches over as it makes them, so what is left to write when it ends is one small
        batch rather than a whole shard; a shard is closed after ``groups_per_shard`` row groups, or by
        :meth:`close_shard`. Until then it has a temp name, as with :func:`write_atomic`.
        """
        self.flush()
        table = self._fingerprinted(table)
        if self._open is None:
            path = self._next_path()
            tmp = _temp_beside(path)
            self._open = _OpenShard(path, tmp, pq.ParquetWriter(tmp.path, self._schema, filesystem=tmp.fs,
                                                                **_parquet_options(table)))
        shard = self._open
        try:
            shard.writer.write_table(table)
        except BaseException:
            self.discard_shard()
            raise
        shard.rows += table.num_rows
        shard.groups += 1
        if shard.groups >= self._groups_per_shard:
            self.close_shard()

    def close_shard(self) -> None:
        """Finish the shard :meth:`add_row_group` has open, if any, and move it to its name."""
        shard, self._open = self._open, None
        if shard is None:
            return
        try:
            shard.writer.close()
        except BaseException:
            remove([shard.tmp])
            raise
        _move_into_place(shard.tmp, shard.path)
        self.shards.append(Shard(str(shard.path.relative_to(self._lake_root)), shard.rows))

    def discard_shard(self) -> None:
        """Drop the open shard's temp file (a producer that failed keeps nothing half written)."""
        shard, self._open = self._open, None
        if shard is not None:
            try:
                shard.writer.close()
            finally:
                remove([shard.tmp])

    def add(self, row: dict) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self._rows_per_shard:
            self.flush()

    def extend(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.add(row)

    def flush(self) -> None:
        if not self._buffer:
            return
        self.close_shard()
        for row in self._buffer:
            row["fingerprint"] = self._fingerprint
        table = pa.Table.from_pylist(self._buffer, schema=self._schema)
        path = self._next_path()
        write_parquet_atomic(table, path)
        self.shards.append(Shard(str(path.relative_to(self._lake_root)), table.num_rows))
        self._buffer = []

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.shards) + len(self._buffer) + (self._open.rows if self._open else 0)


def empty_shard(lake_root: UPath, table: str) -> UPath:
    """A zero-row Parquet file with the table's schema, so its view exists before any data."""
    schema = LAKE_TABLES[table]
    digest = hashlib.sha256(schema.to_string().encode("utf-8")).hexdigest()[:12]
    path = lake_root / "_empty" / f"{table}-{digest}.parquet"
    if not path.exists():
        write_parquet_atomic(schema.empty_table(), path)
    return path
