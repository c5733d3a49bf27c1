"""Many writers on a DuckLake warehouse whose catalog is a real PostgreSQL: four processes at once, and kill -9.

Each process is ``tests/support/cell_writer.py``: it computes cells of a toy stage through ``run_stage``, each cell
replacing its rows in a lake table (``documents_raw``) and a keyed table (``features``). What every table must hold
is computed here from the cells and the row count alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.warehouse.db import Warehouse
from tests.support.crash_entry import PAUSE_ENV, PAUSED_ENV
from tests.support.waiting import finished, wait_for

REPO = Path(__file__).resolve().parents[2]
ROWS = 1000
pytestmark = pytest.mark.slow


def _writer(home: Path, cells: list[str], *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.support.cell_writer", *cells, "--rows", str(ROWS), *extra],
                            cwd=REPO, env=(env or os.environ) | {"BABELBENCH_HOME": str(home)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _cells_held(wh: Warehouse) -> dict[str, tuple[int, int, int, int]]:
    """cell -> (documents rows, distinct page ids, features rows, distinct items) as the warehouse holds them."""
    documents = {lang: (n, d) for lang, n, d in wh.query(
        "SELECT lang, count(*), count(DISTINCT page_id) FROM documents_raw GROUP BY lang")}
    features = {model: (n, d) for model, n, d in wh.query(
        "SELECT model, count(*), count(DISTINCT instance_id) FROM features WHERE benchmark = 'toy' GROUP BY model")}
    return {cell: documents.get(cell, (0, 0)) + features.get(cell, (0, 0)) for cell in documents.keys() | features.keys()}


def test_four_processes_computing_different_cells_at_once_lose_nothing_and_take_no_lock(ducklake: str, home: Path) -> None:
    cells = [[f"w{w}c{c}" for c in range(5)] for w in range(4)]
    finished(*(_writer(home, mine) for mine in cells))

    wh = Warehouse(home, read_only=True)
    expected = {cell: (ROWS, ROWS, ROWS, ROWS) for mine in cells for cell in mine}
    assert _cells_held(wh) == expected
    computed = wh.query("SELECT cell, count(*) FROM artifacts WHERE stage = 'toy-cells' GROUP BY cell")
    assert dict(computed) == {cell: 1 for cell in expected}
    assert wh.scalar("SELECT count(DISTINCT artifact_id) FROM artifacts") == wh.scalar("SELECT count(*) FROM artifacts")
    assert not list(home.glob("*.lock")) and not list(home.glob("*.waiters"))  # no file lock of any kind


def test_four_processes_computing_the_same_cells_leave_exactly_one_result_each(ducklake: str, home: Path,
                                                                                tmp_path: Path) -> None:
    cells = [f"same{c}" for c in range(5)]
    go = tmp_path / "go"
    workers = [_writer(home, cells, "--force", "--start-after", str(go)) for _ in range(4)]
    wait_for(lambda: len(list(tmp_path.glob("go.ready.*"))) == 4, "the four workers to open the warehouse", timeout=300)
    go.touch()  # all four compute the first cell, never computed before, at one moment
    outputs = finished(*workers)

    wh = Warehouse(home, read_only=True)
    assert _cells_held(wh) == {cell: (ROWS, ROWS, ROWS, ROWS) for cell in cells}
    outcomes = wh.query("SELECT status, count(*) FROM artifacts WHERE stage = 'toy-cells' GROUP BY status")
    assert sum(n for _, n in outcomes) == 20 and {s for s, _ in outcomes} <= {"computed", "cached"}
    assert all(line.split()[1] in {"computed", "cached"} for out in outputs for line in out.strip().splitlines()[-5:])
    # the artifact ids follow the commits: the latest computed row of a cell names the fingerprint its rows carry
    for cell in cells:
        latest = wh.scalar("SELECT fingerprint FROM artifacts WHERE stage = 'toy-cells' AND cell = ? AND status ="
                           " 'computed' ORDER BY artifact_id DESC LIMIT 1", [cell])
        assert wh.query("SELECT DISTINCT fingerprint FROM features WHERE model = ?", [cell]) == [(latest,)]


def test_a_process_killed_mid_commit_leaves_the_catalog_consistent_and_the_rerun_completes(
        ducklake: str, home: Path, tmp_path: Path) -> None:
    paused = tmp_path / "paused"
    victim_cells = [f"v{c}" for c in range(4)]
    others = [[f"o{w}c{c}" for c in range(4)] for w in range(3)]
    victim = _writer(home, victim_cells, env=os.environ | {PAUSE_ENV: "commit:toy-cells[v2]", PAUSED_ENV: str(paused)})
    workers = [_writer(home, mine) for mine in others]
    wait_for(paused.exists, "the victim to reach the commit of v2", timeout=300)
    os.kill(victim.pid, signal.SIGKILL)  # every write of v2 is in its open transaction: none may be seen
    victim.wait()
    finished(*workers)

    wh = Warehouse(home, read_only=True)
    held = _cells_held(wh)
    assert held == {cell: (ROWS, ROWS, ROWS, ROWS) for cell in ["v0", "v1", *(c for mine in others for c in mine)]}
    assert not wh.query("SELECT * FROM artifacts WHERE cell IN ('v2', 'v3')")

    [rerun] = finished(_writer(home, victim_cells))
    assert [line.split()[1] for line in rerun.strip().splitlines()[-4:]] == ["cached", "cached", "computed", "computed"]
    wh = Warehouse(home, read_only=True)
    assert _cells_held(wh)["v2"] == (ROWS, ROWS, ROWS, ROWS) and _cells_held(wh)["v3"] == (ROWS, ROWS, ROWS, ROWS)
    leftovers = [p for p in (home / "lake" / "documents_raw").rglob("*.parquet")]
    assert leftovers == []  # the staged shards were copied and deleted, the dead writer's swept by the rerun
