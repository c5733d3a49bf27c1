"""The real flows on a DuckLake warehouse (PostgreSQL catalog), several CLI processes at once, against the embedded
default running the same commands one after another: every table and view must come out the same.

The concurrent work is the corpus backfill of two languages and a CLIR build, three processes on one DuckLake. (The
``backfill`` command's other steps extend every collection already built; two of them at once each add only their
own language to it, an application-level race over the collection's language list that no warehouse can settle,
so the collections are built here in a process of their own.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.postgres import Cluster
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV
from tests.support.home_snapshot import table_snapshot
from tests.support.postgres import new_database

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BASE = "en,de,fr"
TOGETHER = [("corpus", "ingest", "--lang", "ja"), ("corpus", "ingest", "--lang", "zh"),
            ("clir", "build", "--name", "c2", "--langs", BASE, "--min-documents", "10")]


def _cli(home: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "--home", str(home), *args], cwd=REPO, text=True,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _finish(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        output, _ = process.communicate(timeout=900)
        assert process.returncode == 0, output[-4000:]


def _env(prefect_api: None, **extra: str) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k not in {WAREHOUSE_ENV}}
    return env | {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "BABELBENCH_COMPUTE": "inline"} | extra


def test_two_backfills_and_a_clir_build_at_once_on_a_ducklake_equal_the_same_run_in_turn_on_the_embedded_default(
        prefect_api: None, postgres: Cluster, tmp_path: Path) -> None:
    source = build_sample_mirror(tmp_path / "mirror").root.as_uri()
    embedded, lake = tmp_path / "embedded", tmp_path / "lake"
    plain = _env(prefect_api)
    on_lake = _env(prefect_api, **{WAREHOUSE_ENV: DUCKLAKE_PREFIX + postgres.conninfo(new_database(postgres))})
    base = [("corpus", "ingest", "--lang", BASE, "--source", source),
            ("clir", "build", "--name", "c1", "--langs", BASE, "--min-documents", "10")]
    for args in base:
        _finish(_cli(embedded, plain, *args))
        _finish(_cli(lake, on_lake, *args))
    together = [(*args, "--source", source) if args[0] == "corpus" else args for args in TOGETHER]
    for args in together:  # in turn, on the embedded default
        _finish(_cli(embedded, plain, *args))
    _finish(*[_cli(lake, on_lake, *args) for args in together])  # at once, on the DuckLake

    expected = table_snapshot(embedded, across_backends=True)
    os.environ[WAREHOUSE_ENV] = on_lake[WAREHOUSE_ENV]
    try:
        found = table_snapshot(lake, across_backends=True)
        with Warehouse(lake, read_only=True) as wh:
            spans = wh.query("SELECT started_at, finished_at FROM runs ORDER BY started_at")[-3:]
            langs = {lang for (lang,) in wh.query("SELECT DISTINCT lang FROM documents")}
    finally:
        del os.environ[WAREHOUSE_ENV]
    assert langs == {"en", "de", "fr", "ja", "zh"}
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # the three ran at the same time
    assert found.keys() == expected.keys()
    assert {t: v for t, v in found.items() if v != expected[t]} == {}
