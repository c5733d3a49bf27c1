"""``babelbench warehouse copy``: an embedded home into a DuckLake on a real PostgreSQL and back again, every table's
rows the same (compared here row by row, not by the command's digests), the cache state carried (a rerun is all
cache hits), an occupied target refused, and a copy that does not match its source reported as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deployments.postgres import Cluster
from flows.cli import app
from tasks.stage import ReadFields, run_stage
from tasks.warehouse.db import Warehouse, insert_rows
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV
from tests.support.cell_writer import STAGE, compute
from tests.support.postgres import new_database

CELLS = ("c0", "c1", "c2")
ROWS = 40
#: tables with rows here, compared row by row between the warehouses (the lake table through its view)
COMPARED = ("artifacts", "features", "leaderboard", "runs", "documents_raw")


def _fill(home: Path) -> None:
    """A toy stage's cells (a lake table, a keyed table, artifacts), a run and a leaderboard row (JSON, a list, a
    timestamp, NULLs)."""
    wh = Warehouse(home)
    for cell in CELLS:
        run_stage(wh, STAGE, cell, ReadFields(values={"rows": ROWS}), {}, compute(wh, cell, ROWS))
    with wh.transaction() as cur:
        cur.execute("INSERT INTO runs (run_id, flow, started_at, status, params, code_version) VALUES"
                    " ('r1', 'evaluate', TIMESTAMP '2026-01-02 03:04:05.678901', 'completed', ?, 'v1')",
                    [json.dumps({"benchmark": "b", "langs": ["en", "ja"]})])
        insert_rows(cur, "leaderboard", [("b", "closed_book", "all", "all", "m", "accuracy", 0.123456789012345, None,
                                          None, 3, "improved", ["j1", "j2"], "fp", 3, 0, None)])


def _rows(home: Path, url: str | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple]]:
    if url:
        monkeypatch.setenv(WAREHOUSE_ENV, url)
    else:
        monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    wh = Warehouse(home, read_only=True)
    return {table: sorted(wh.query(f"SELECT * FROM {table}"), key=repr) for table in COMPARED}


def _copy(home: Path, to: str, *, warehouse: str | None = None) -> tuple[int, str]:
    options = ["--warehouse", warehouse] if warehouse else []
    result = CliRunner().invoke(app, ["--home", str(home), *options, "warehouse", "copy", "--to", to])
    return result.exit_code, result.output


def test_an_embedded_home_copied_into_a_ducklake_and_back_keeps_every_row_and_its_cache(
        postgres: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    original, back = tmp_path / "original", tmp_path / "back"
    _fill(original)
    expected = _rows(original, None, monkeypatch)
    assert len(expected["documents_raw"]) == ROWS * len(CELLS) and len(expected["artifacts"]) == len(CELLS)

    lake = DUCKLAKE_PREFIX + postgres.conninfo(new_database(postgres))
    code, output = _copy(original, lake)
    assert code == 0, output
    assert "every table has the same row count and content digest in both" in output
    assert _rows(original, lake, monkeypatch) == expected

    code, output = _copy(original, str(back), warehouse=lake)  # and back, into a new home
    assert code == 0, output
    assert _rows(back, None, monkeypatch) == expected
    held = Warehouse(back, read_only=True)
    shards = [path for (path,) in held.query("SELECT path FROM lake_shards")]
    assert shards and all((back / "lake" / path).is_file() for path in shards)  # the new home's own lake

    wh = Warehouse(back)  # the cache came along: the same cells are hits
    assert [run_stage(wh, STAGE, cell, ReadFields(values={"rows": ROWS}), {}, compute(wh, cell, ROWS)).status
            for cell in CELLS] == ["cached"] * len(CELLS)

    code, output = _copy(original, lake)
    assert code == 2 and "already holds data (" in output and "a copy goes into an empty warehouse" in output


def test_a_copy_that_does_not_match_its_source_is_reported_and_fails(
        postgres: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WAREHOUSE_ENV, raising=False)
    _fill(tmp_path / "original")
    original_replace = Warehouse.replace_cells

    def corrupting(self, changes, write=lambda _cur: None):  # type: ignore[no-untyped-def]
        def write_and_corrupt(cur):  # type: ignore[no-untyped-def]
            write(cur)
            cur.execute("UPDATE features SET value = value + 1 WHERE instance_id = 'i3' AND model = 'c1'")
        return original_replace(self, changes, write_and_corrupt)

    monkeypatch.setattr(Warehouse, "replace_cells", corrupting)  # the fault: one value changed on the way
    code, output = _copy(tmp_path / "original", DUCKLAKE_PREFIX + postgres.conninfo(new_database(postgres)))
    assert code == 1
    assert [line.split()[0] for line in output.splitlines() if "DIFFERS" in line] == ["features"]
    assert "the copy differs from the source in features" in output
