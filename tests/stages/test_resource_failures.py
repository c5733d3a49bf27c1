"""A cell that runs out of disk or memory fails with the stage, the language, how much there was and what to change;
the cells finished before it are kept.

The faults are real where the machine allows it: DuckDB refusing to go past its memory limit, and a Dask worker
process killed by SIGKILL as the OOM killer kills one. A full disk is injected as the ``OSError`` a write raises,
since filling a disk in a test is not possible here.
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tasks import compute
from tasks.resources import ResourceExhausted
from tasks.stage import Stage, StageConfig, StageOutput, run_stage
from tasks.warehouse.db import Warehouse

STAGE = Stage("toy-build", 1)


class ToyConfig(StageConfig):
    size: int = 1


def _build(fp: str) -> StageOutput:
    return StageOutput(rows=3)


def _full_disk(fp: str) -> StageOutput:
    raise OSError(errno.ENOSPC, "No space left on device", "/data/lake/shard-0001.parquet")


def _duckdb_past_its_limit(fp: str) -> StageOutput:
    con = duckdb.connect(config={"memory_limit": "20MB", "threads": "1", "temp_directory": ""})
    con.execute("SELECT list(range) FROM range(20000000)").fetchall()
    return StageOutput(rows=1)


def _failed_rows(wh: Warehouse) -> dict[str, tuple[str, str | None]]:
    return {cell: (status, message) for cell, status, message in wh.query(
        "SELECT cell, status, message FROM artifacts WHERE stage = 'toy-build' ORDER BY artifact_id")}


def test_a_full_disk_names_the_stage_the_language_the_free_space_and_what_to_change(tmp_path: Path) -> None:
    with Warehouse(tmp_path) as wh:
        run_stage(wh, STAGE, "en", ToyConfig(), {}, _build)
        with pytest.raises(ResourceExhausted) as raised:
            run_stage(wh, STAGE, "de", ToyConfig(), {}, _full_disk)
        rows = _failed_rows(wh)
    message = str(raised.value)
    assert raised.value.resource == "disk"
    assert message.startswith("toy-build[de] (language de) ran out of disk space: [Errno 28] No space left on device")
    assert f"{tmp_path}: " in message and " GB free" in message  # how much the home's disk has now
    assert "BABELBENCH_HOME" in message and "BABELBENCH_LAKE" in message and "TMPDIR" in message
    assert isinstance(raised.value.__cause__, OSError)
    assert rows["en"][0] == "computed"  # the finished cell is kept
    assert rows["de"][0] == "failed" and rows["de"][1] == f"ResourceExhausted: {message}"


def test_duckdb_out_of_memory_names_the_cell_the_peak_and_what_to_change(tmp_path: Path) -> None:
    with Warehouse(tmp_path) as wh, pytest.raises(ResourceExhausted) as raised:
        run_stage(wh, STAGE, "ja", ToyConfig(), {}, _duckdb_past_its_limit)
    message = str(raised.value)
    assert raised.value.resource == "memory"
    assert message.startswith("toy-build[ja] (language ja) ran out of memory: an allocation failed: "
                              "OutOfMemoryException: Out of Memory Error")
    assert "This process peaked at " in message and "BABELBENCH_COMPUTE=inline" in message
    assert isinstance(raised.value.__cause__, duckdb.OutOfMemoryException)


def test_other_errors_pass_through_unchanged(tmp_path: Path) -> None:
    def broken(fp: str) -> StageOutput:
        raise OSError(errno.EACCES, "Permission denied", "/data")

    with Warehouse(tmp_path) as wh, pytest.raises(PermissionError):
        run_stage(wh, STAGE, "en", ToyConfig(), {}, broken)


def _killed_by_the_system(item: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to the process holding the most memory
    return item


@pytest.fixture
def dask_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        monkeypatch.setenv("BABELBENCH_COMPUTE", "dask")
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        compute.shutdown()
        try:
            yield
        finally:
            compute.shutdown()


@pytest.mark.slow
def test_a_dask_worker_killed_mid_cell_is_told_as_memory_not_a_bare_kill(tmp_path: Path, dask_cluster: None) -> None:
    def parallel(fp: str) -> StageOutput:
        return StageOutput(rows=sum(compute.map_parallel(_killed_by_the_system, [1])))

    with Warehouse(tmp_path) as wh, pytest.raises(ResourceExhausted) as raised:
        run_stage(wh, STAGE, "fr", ToyConfig(), {}, parallel)
    assert raised.value.resource == "memory"
    assert str(raised.value).startswith(
        "toy-build[fr] (language fr) ran out of memory: a worker process was killed (the system's OOM killer, or "
        "Dask's nanny at the worker's memory limit).")
    assert type(raised.value.__cause__).__name__ == "KilledWorker"


@pytest.mark.skipif(not hasattr(__import__("ctypes").CDLL(None), "malloc_trim"), reason="glibc only")
def test_memory_freed_inside_the_heap_goes_back_to_the_system_once_released() -> None:
    """256 MB of small blocks (below glibc's mmap threshold), freed while a block after them stays: glibc keeps the
    freed pages (the heap cannot shrink past the live block) until :func:`compute.release_freed_memory`."""
    import subprocess
    import sys

    script = (
        "import psutil; from tasks.compute import release_freed_memory\n"
        "rss = lambda: psutil.Process().memory_info().rss\n"
        "blocks = [bytearray(64 * 1024) for _ in range(4096)]; pinned = bytearray(64 * 1024)\n"
        "del blocks; kept = rss(); release_freed_memory(); print(kept - rss())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert int(done.stdout) > 200 * 1024 * 1024
