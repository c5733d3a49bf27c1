"""The real flows on a DuckLake warehouse (PostgreSQL catalog), several CLI processes at once, against the embedded
default running the same commands one after another: every table and view must come out the same.

The concurrent work is two ``backfill`` commands of different languages and a CLIR build, three processes on one
DuckLake. The two backfills are made to read the collections they extend before either extends one (a meeting
point of ``tests/support/crash_entry.py``): each reads the collection ``c1`` with the base languages, so that
neither sees the other's language and only the backfill's own check (``Backfill.grow``) builds the directions
between the two new languages, as the second backfill in turn does. The CLIR build of a new collection, ``c2``,
starts once both have read the collections (a collection that exists when a backfill looks is one it extends); a
second meeting point holds each backfill's first run of ``c1`` open until the build of ``c2`` has opened its run, so
that the three runs overlap whatever the machine's speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.postgres import Cluster
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV
from tests.support.crash_entry import PAUSE_ENV, PAUSED_ENV
from tests.support.home_snapshot import table_snapshot
from tests.support.postgres import new_database
from tests.support.waiting import finished, wait_for

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BASE = "en,de,fr"
BACKFILLS = [("backfill", "--langs", "ja"), ("backfill", "--langs", "zh")]
BUILD = ("clir", "build", "--name", "c2", "--langs", BASE, "--min-documents", "10")
#: a backfill that finds another's language added meanwhile runs a scope again: the runs log has more rows, the
#: same flows and outcomes
RUN_KINDS = {"runs": "SELECT DISTINCT flow, status FROM runs"}


def _cli(home: Path, env: dict[str, str], *args: str, module: str = "flows.cli") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", module, "--home", str(home), *args], cwd=REPO, text=True,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _env(prefect_api: None, **extra: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k not in {WAREHOUSE_ENV}}
    return env | {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "BABELBENCH_COMPUTE": "inline"} | extra


def test_two_backfills_and_a_clir_build_at_once_on_a_ducklake_equal_the_same_commands_in_turn_on_the_embedded_default(
        prefect_api: None, postgres: Cluster, tmp_path: Path) -> None:
    source = build_sample_mirror(tmp_path / "mirror").root.as_uri()
    embedded, lake, met = tmp_path / "embedded", tmp_path / "lake", tmp_path / "met"
    plain = _env(prefect_api)
    on_lake = _env(prefect_api, **{WAREHOUSE_ENV: DUCKLAKE_PREFIX + postgres.conninfo(new_database(postgres))})
    base = [("corpus", "ingest", "--lang", BASE, "--source", source),
            ("clir", "build", "--name", "c1", "--langs", BASE, "--min-documents", "10")]
    for args in base:
        finished(_cli(embedded, plain, *args))
        finished(_cli(lake, on_lake, *args))
    for args in [*BACKFILLS, BUILD]:  # in turn, on the embedded default
        finished(_cli(embedded, plain, *args))
    running = f"running:clir-build:{len(BACKFILLS) + 1}"
    meeting = on_lake | {PAUSE_ENV: f"meet:clir-build:{len(BACKFILLS)};{running}", PAUSED_ENV: str(met)}
    backfills = [_cli(lake, meeting, *args, module="tests.support.crash_entry") for args in BACKFILLS]
    read = met / "meet"
    wait_for(lambda: read.is_dir() and len(list(read.iterdir())) == len(BACKFILLS), "both backfills to read the"
             " collections", timeout=600)
    build = _cli(lake, on_lake | {PAUSE_ENV: running, PAUSED_ENV: str(met)}, *BUILD, module="tests.support.crash_entry")
    finished(*backfills, build)

    expected = table_snapshot(embedded, across_backends=True, projected=RUN_KINDS)
    os.environ[WAREHOUSE_ENV] = on_lake[WAREHOUSE_ENV]
    try:
        found = table_snapshot(lake, across_backends=True, projected=RUN_KINDS)
        with Warehouse(lake, read_only=True) as wh:
            builds = [(start, end, json.loads(params)) for start, end, params in wh.query(
                "SELECT started_at, finished_at, params FROM runs WHERE flow = 'clir-build' ORDER BY started_at")]
            directions = {cell for (cell,) in wh.query("SELECT DISTINCT cell FROM artifacts WHERE stage = 'qrels'")}
    finally:
        del os.environ[WAREHOUSE_ENV]
    # each backfill first extended c1 without the other's language; the directions between the two were built after
    c1 = [set(params["langs"]) for _, _, params in builds if params["name"] == "c1"]
    assert {"ja", "zh"} <= {lang for langs in c1 for lang in langs if len(langs & {"ja", "zh"}) == 1}
    assert {"c1:ja>zh", "c1:zh>ja"} <= directions
    [(c2_start, c2_end, _)] = [run for run in builds if run[2]["name"] == "c2"]
    assert any(start < c2_end and c2_start < end for start, end, params in builds if params["name"] == "c1")
    assert found.keys() == expected.keys()
    assert {t: v for t, v in found.items() if v != expected[t]} == {}
