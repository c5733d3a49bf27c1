"""The lake on an fsspec URL (``BABELBENCH_LAKE``): the same tables as the home's own lake, written by Dask worker
processes to a shared location or held by an in-memory filesystem no local path reaches; the crash sweep and the
deletion of superseded shards through the filesystem; a warehouse refusing a lake other than its own."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner
from upath import UPath

from flows.cli import app
from flows.clir import ClirBuildParams, clir_build_flow, clir_eval_flow
from flows.corpus import CorpusParams, corpus_flow
from tasks import compute
from tasks.errors import BabelbenchError, ConfigError
from tasks.pairing.config import ClirConfig
from tasks.placement import DeviceConfig, resolve
from tasks.rankers.dense import DenseRanker
from tasks.sample.mirror import build_sample_mirror
from tasks.stages.clir_eval import ClirEvalParams
from tasks.warehouse import embedded, writers
from tasks.warehouse.location import WAREHOUSE_FILE
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_ENV, LAKE_TABLES, ShardWriter, cell_dir, sweep_abandoned
from tests.support.home_snapshot import table_snapshot
from tests.support.tiny_models import build_bi_encoder
from tests.warehouse.test_warehouse import _doc, _write_cell

pytestmark = pytest.mark.usefixtures("prefect_api")
LANGS = ["en", "de"]
SMALL = ClirConfig(top_k=20, min_documents=10)


def _build(home: Path, source: str) -> None:
    """Ingest and mine the sample, in several parse units and mining batches (shards written by several tasks)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tasks.dumps.ingest.CHUNK_BYTES", 4000)
        patch.setattr("tasks.pairing.mining.QUERY_BATCH", 7)
        corpus_flow(CorpusParams(langs=LANGS, source=source, kind="xml", home=str(home), progress=False))
        clir_build_flow(ClirBuildParams(name="t", langs=LANGS, clir=SMALL, home=str(home)))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_sample_mirror(tmp_path_factory.mktemp("mirror")).root.as_uri()


@pytest.fixture(scope="module")
def default_lake(tmp_path_factory: pytest.TempPathFactory, source: str,
                 prefect_api: None) -> dict[str, tuple[int, str]]:
    """The table snapshot of the sample built in-process on the home's own lake."""
    home = tmp_path_factory.mktemp("default-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(LAKE_ENV, raising=False)
        _build(home, source)
        assert any((home / "lake" / "documents_raw").rglob("*.parquet"))
        return table_snapshot(home)


def _catalog(home: Path) -> tuple[set[str], str, str | None]:
    """The shard paths the catalog lists, the lake views' SQL and the recorded lake, read as `babelbench sql` does."""
    with Warehouse(home, read_only=True) as wh:
        listed = {path for (path,) in wh.query("SELECT path FROM lake_shards")}
        views = "\n".join(sql for (sql,) in wh.query(
            "SELECT sql FROM duckdb_views() WHERE view_name IN (SELECT unnest(?))", [list(LAKE_TABLES)]))
        return listed, views, wh.scalar("SELECT lake FROM warehouse_info")


def _differences(tables: dict[str, tuple[int, str]], expected: dict[str, tuple[int, str]]) -> set[str]:
    assert set(tables) == set(expected)
    return {table for table, value in tables.items() if value != expected[table]}


def _shard_files(root: UPath) -> set[str]:
    """Every file in the catalogued tables' folders of the lake, relative to it (a writer marker left behind
    would be one too many)."""
    return {str(path.relative_to(root)) for table in LAKE_TABLES for path in (root / table).rglob("*") if path.is_file()}


@pytest.mark.slow
def test_a_file_url_lake_written_by_dask_worker_processes_holds_the_default_lakes_tables(
        default_lake: dict[str, tuple[int, str]], source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        cluster: object) -> None:
    from distributed import Client, get_task_stream

    shared, home = tmp_path / "shared-lake", tmp_path / "home"
    monkeypatch.setenv(LAKE_ENV, shared.as_uri())
    monkeypatch.setenv("BABELBENCH_COMPUTE", "dask")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)  # type: ignore[attr-defined]
    compute.shutdown()
    try:
        with Client(cluster.scheduler_address) as watcher, get_task_stream(client=watcher) as stream:  # type: ignore[attr-defined]
            _build(home, source)
    finally:
        compute.shutdown()
    ran = {str(task["key"][0] if isinstance(task["key"], tuple) else task["key"]).split("-")[0] for task in stream.data}

    assert {"parse_unit", "mine_batch"} <= ran  # the workers wrote shards, given the lake as a pickled UPath
    assert _differences(table_snapshot(home), default_lake) == {"warehouse_info"}  # which holds the lake's location
    listed, views, recorded = _catalog(home)
    assert recorded == shared.as_uri()
    assert listed and _shard_files(UPath(shared.as_uri())) == listed
    assert str(shared) in views and "file:" not in views  # DuckDB reads a local lake by plain path
    assert not (home / "lake").exists()


def test_a_memory_lake_serves_every_table_through_duckdb_and_no_local_path(
        default_lake: dict[str, tuple[int, str]], source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"memory://lake-{uuid.uuid4().hex[:8]}"
    root, home = UPath(url), tmp_path / "home"
    monkeypatch.setenv(LAKE_ENV, url)
    monkeypatch.setenv("BABELBENCH_COMPUTE", "inline")
    try:
        _build(home, source)
        assert _differences(table_snapshot(home), default_lake) == {"warehouse_info"}
        listed, views, recorded = _catalog(home)
        assert recorded == url and listed and _shard_files(root) == listed
        assert url in views and str(tmp_path) not in views

        with Warehouse(home) as wh:  # the dense ranker's embedding cache is in the lake too
            texts = [t for (t,) in wh.query("SELECT title || ' ' || text FROM documents WHERE NOT is_redirect")]
        model = build_bi_encoder(texts, tmp_path)
        clir_eval_flow(ClirEvalParams(name="t", ranker=f"dense:{model}", split="all", k=20, home=str(home)))
        caches = [p for p in (root / "embeddings").rglob("*") if p.is_file()]
        assert sorted((p.parent.name, p.suffix) for p in caches) == [(lang, ".npz") for lang in sorted(LANGS)]
        with Warehouse(home) as wh:
            assert wh.scalar("SELECT count(*) FROM rankings") > 0
            for cache in caches:
                cache.unlink()
            encoded = DenseRanker(str(model), resolve(DeviceConfig())).document_vectors(wh, "de")  # encoded, and the cache written again
            monkeypatch.setattr(DenseRanker, "encode", lambda *_: pytest.fail("encoded instead of reading the cache"))
            cached = DenseRanker(str(model), resolve(DeviceConfig())).document_vectors(wh, "de")
        assert len(encoded[0]) > 0 and np.array_equal(cached[0], encoded[0]) and np.array_equal(cached[1], encoded[1])

        # `babelbench sql` in a process that has not opened the warehouse: no connection of the flows is reused
        for database in list(embedded._databases.values()):
            database.close_idle()
        monkeypatch.setattr(embedded, "_databases", {})
        monkeypatch.setenv("BABELBENCH_HOME", str(home))
        result = CliRunner().invoke(app, ["sql", "--json",
                                          "SELECT lang, count(*) AS n FROM documents_raw GROUP BY lang"])
        assert result.exit_code == 0, result.output
        assert {row["lang"] for row in json.loads(result.output) if row["n"] > 0} == set(LANGS)

        corpus_flow(CorpusParams(langs=LANGS, source=source, kind="xml", home=str(home), progress=False,
                                 force=["documents"]))
        superseded = listed - _catalog(home)[0]
        assert superseded and not any((root / path).exists() for path in superseded)
        assert _shard_files(root) == _catalog(home)[0]
        assert not (home / "lake").exists()
    finally:
        root.fs.rm(root.path, recursive=True)


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    return int(child.stdout)


def _left_by(directory: UPath, pid: int) -> None:
    """Make ``directory``'s writer marker name process ``pid`` of this host."""
    (directory / writers.MARKER).write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "started": None}))


def test_the_crash_sweep_and_superseded_shards_go_through_the_lakes_filesystem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"memory://sweep-{uuid.uuid4().hex[:8]}"
    root = UPath(url)
    monkeypatch.setenv(LAKE_ENV, url)
    dead = _dead_pid()
    try:
        with Warehouse(tmp_path) as wh:
            registered = _write_cell(wh, "en", "fp", ["a", "b", "c"])
            _left_by(registered, dead)  # published, then its writer died before dropping the marker
            abandoned = cell_dir(wh.lake_root, "documents_raw", "de", "fp")
            writer = ShardWriter(wh.lake_root, abandoned, LAKE_TABLES["documents_raw"], "fp")
            writer.add(_doc("de", 1, "x"))
            writer.flush()
            _left_by(abandoned, dead)  # its writer died before registering the shard
            live = cell_dir(wh.lake_root, "documents_raw", "fr", "fp")  # this process writes it
            unmarked = cell_dir(wh.lake_root, "documents_raw", "ja", "fp")
            writers.release(unmarked)  # no marker, and a memory folder has no modified time: its age is unknown

            assert sweep_abandoned(wh) == [abandoned]
            assert not abandoned.exists() and live.exists() and unmarked.exists()
            assert registered.exists() and not (registered / writers.MARKER).exists()
            assert wh.scalar("SELECT count(*) FROM documents_raw") == 3

            old = {path for (path,) in wh.query("SELECT path FROM lake_shards")}
            recomputed = _write_cell(wh, "en", "fp", ["a", "b", "c", "d"])  # a forced recompute: same fingerprint
            assert not any((root / path).exists() for path in old)
            assert {str(p.relative_to(root)) for p in recomputed.iterdir() if p.suffix == ".parquet"} == {
                path for (path,) in wh.query("SELECT path FROM lake_shards")}
            assert wh.scalar("SELECT count(*) FROM documents_raw") == 4
        assert not (tmp_path / "lake").exists()
    finally:
        root.fs.rm(root.path, recursive=True)


def test_a_warehouse_keeps_the_lake_it_was_created_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, shared = tmp_path / "home", tmp_path / "shared"
    monkeypatch.setenv(LAKE_ENV, str(shared))
    Warehouse(home).close()
    monkeypatch.delenv(LAKE_ENV)
    with Warehouse(home) as wh:  # later opens use the recorded lake
        _write_cell(wh, "en", "fp", ["a"])
    assert any(shared.rglob("*.parquet")) and not (home / "lake").exists()
    monkeypatch.setenv(LAKE_ENV, shared.as_uri())  # the same location as a URL
    Warehouse(home, read_only=True).close()

    monkeypatch.setenv(LAKE_ENV, "memory://elsewhere")
    for read_only in (False, True):
        with pytest.raises(BabelbenchError) as refused:
            Warehouse(home, read_only=read_only)
        assert "memory://elsewhere" in str(refused.value) and str(shared) in str(refused.value)

    monkeypatch.delenv(LAKE_ENV)
    Warehouse(tmp_path / "own").close()
    monkeypatch.setenv(LAKE_ENV, "memory://elsewhere")
    with pytest.raises(BabelbenchError, match="memory://elsewhere") as refused:
        Warehouse(tmp_path / "own")
    assert str(tmp_path / "own" / "lake") in str(refused.value)

    monkeypatch.setenv(LAKE_ENV, "s3://AKIAEXAMPLE:s3cret-key@bucket/lake")
    with pytest.raises(ConfigError) as refused:
        Warehouse(tmp_path / "third")
    assert "s3cret-key" not in str(refused.value) and not (tmp_path / "third" / WAREHOUSE_FILE).exists()
