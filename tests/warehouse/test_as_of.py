"""Results you can go back to: a leaderboard and a report name the warehouse snapshot they read, and ``--as-of`` that
snapshot shows the same table again after later writes (a DuckLake on a real PostgreSQL); the embedded warehouse
says it keeps none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.warehouse.db import Warehouse, insert_rows

BENCHMARK = "b"


def _board(wh: Warehouse, values: dict[str, float]) -> None:
    """The benchmark's leaderboard as one accuracy per model (replacing what it held)."""
    with wh.transaction() as cur:
        cur.execute("DELETE FROM leaderboard WHERE benchmark = ?", [BENCHMARK])
        insert_rows(cur, "leaderboard", [(BENCHMARK, "closed_book", "all", "all", model, "accuracy", value, value - 0.1,
                                          value + 0.1, 40, "improved", ["j"], "fp", 40, 0, 0)
                                         for model, value in values.items()])


def _cli(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--home", str(home), *args])
    return result.exit_code, result.output


def test_a_leaderboard_read_at_its_snapshot_after_later_writes_is_the_same_table_byte_for_byte(
        ducklake: str, home: Path) -> None:
    wh = Warehouse(home)
    _board(wh, {"m1": 0.5})
    code, before = _cli(home, "leaderboard", "--benchmark", BENCHMARK)
    assert code == 0, before
    [snapshot] = re.findall(r"^warehouse snapshot (\d+)$", before, re.MULTILINE)
    assert int(snapshot) == wh.snapshot()  # nothing was written since: the latest one
    as_json = _cli(home, "leaderboard", "--benchmark", BENCHMARK, "--format", "json")[1]
    assert [(row["model"], row["value"], row["warehouse_snapshot"]) for row in json.loads(as_json)] == [
        ("m1", 0.5, int(snapshot))]

    _board(wh, {"m1": 0.7, "m2": 0.65})  # later writes: a better m1, a new m2
    code, again = _cli(home, "leaderboard", "--benchmark", BENCHMARK, "--as-of", snapshot)
    assert code == 0 and again == before
    assert _cli(home, "leaderboard", "--benchmark", BENCHMARK, "--format", "json", "--as-of", snapshot)[1] == as_json
    now = _cli(home, "leaderboard", "--benchmark", BENCHMARK)[1]
    assert "0.700" in now and "m2" in now and "0.500" not in now
    assert int(re.findall(r"^warehouse snapshot (\d+)$", now, re.MULTILINE)[0]) > int(snapshot)

    code, refused = _cli(home, "leaderboard", "--benchmark", BENCHMARK, "--as-of", "999999")
    assert code == 2 and "has no snapshot 999999" in refused


def test_the_embedded_warehouse_says_it_keeps_no_snapshots_and_refuses_as_of(home: Path) -> None:
    _board(Warehouse(home), {"m1": 0.5})
    code, table = _cli(home, "leaderboard", "--benchmark", BENCHMARK)
    assert code == 0 and table.rstrip().endswith("warehouse snapshot none (the embedded warehouse keeps no snapshots)")
    assert [row["warehouse_snapshot"] for row in json.loads(_cli(home, "leaderboard", "--benchmark", BENCHMARK,
                                                                 "--format", "json")[1])] == [None]
    code, refused = _cli(home, "leaderboard", "--benchmark", BENCHMARK, "--as-of", "3")
    assert code == 2 and "keeps no snapshots" in refused


@pytest.mark.usefixtures("prefect_api")
def test_a_report_names_its_snapshot_and_as_of_it_shows_the_same_tables_after_later_writes(
        ducklake: str, home: Path, tmp_path: Path) -> None:
    import mlflow

    from flows.report import ReportParams, report_flow
    from tasks.tracking import SNAPSHOT_TAG, tracking_uri

    wh = Warehouse(home)
    _board(wh, {"m1": 0.5})
    first, again = tmp_path / "first.html", tmp_path / "again.html"
    report_flow(ReportParams(benchmark=BENCHMARK, out=str(first), home=str(home)))
    [named] = re.findall(r'<span class="snapshot">(\d+)</span>', first.read_text(encoding="utf-8"))
    snapshot = int(named)
    assert Warehouse(home, as_of=snapshot).scalar("SELECT value FROM leaderboard") == 0.5
    _board(wh, {"m1": 0.7, "m2": 0.65})
    report_flow(ReportParams(benchmark=BENCHMARK, out=str(again), as_of=snapshot, home=str(home)))

    def content(page: Path) -> str:  # the page less when it was generated
        return re.sub(r" on \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", page.read_text(encoding="utf-8"))

    assert content(again) == content(first) and "0.500" in content(again) and "m2" not in content(again)
    client = mlflow.MlflowClient(tracking_uri(home))
    reports = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                 "tags.`babelbench.flow` = 'report'")
    assert sorted(run.data.tags[SNAPSHOT_TAG] for run in reports) == [str(snapshot)] * 2
