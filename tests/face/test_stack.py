"""The production stack on one machine (``make stack``: ``deployments/stack.py``) and the Prefect walk on it.

The stack is started for real in a throwaway home, on free loopback ports: PostgreSQL from the distribution, a
Prefect server and an MLflow tracking server on it, two process workers on the ``babelbench`` pool (one flow run
each at a time), the warehouse on a DuckLake. The walk is the screenshot script's (``deployments/screenshots.py``,
pictures aside): the deployments registered, a corpus build, then a backfill and, while it runs, a stage
rerun — which only the other worker can take —, then a model added, whose evaluation the automation schedules. What each
piece kept is read where it keeps it: the warehouse on the DuckLake, Prefect's runs and MLflow's experiments in
their PostgreSQL databases, MLflow's artifacts in the stack's artifact store. Never skipped where PostgreSQL is
installed (``.ci/run`` installs it and makes it required).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from deployments.stack import Stack
from tasks.processes import free_loopback_port, process_alive
from tasks.warehouse.location import WAREHOUSE_ENV
from tests.support.postgres import require_postgres

if TYPE_CHECKING:
    from deployments.screenshots import Prefect

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
CLIENT_VARIABLES = ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", WAREHOUSE_ENV, "PREFECT_HOME", "BABELBENCH_LAKE")


def _stack_command(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "deployments.stack", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[Stack, dict[str, str]]]:
    """``make stack`` with two workers in a throwaway home (under the system's temp dir, reachable by the user
    PostgreSQL runs as); ``make stack-down`` afterwards."""
    require_postgres()
    home = Path(tempfile.mkdtemp(prefix="babelbench-stack-"))
    home.chmod(0o755)
    ports = {"BABELBENCH_PG_PORT": free_loopback_port(), "PREFECT_PORT": free_loopback_port(),
             "MLFLOW_PORT": free_loopback_port()}
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_VARIABLES} | {
        "BABELBENCH_HOME": str(home), "PREFECT_WORKER_QUERY_SECONDS": "1"} | {k: str(v) for k, v in ports.items()}
    running = Stack(home, ports["BABELBENCH_PG_PORT"], ports["PREFECT_PORT"], ports["MLFLOW_PORT"])
    try:
        printed = _stack_command(env, "up", "--workers", "2")
        assert f"Prefect UI   http://127.0.0.1:{ports['PREFECT_PORT']}" in printed
        yield running, env
    finally:
        subprocess.run([sys.executable, "-m", "deployments.stack", "down"], cwd=REPO, env=env, timeout=300)
        shutil.rmtree(home, ignore_errors=True)


def _workers_that_submitted(prefect: Prefect, flow_run_ids: list[str]) -> dict[str, str]:
    """Which worker submitted each of ``flow_run_ids``, from Prefect's ``prefect.worker.submitted-flow-run`` events
    (the server stores events in batches, a few seconds after a worker sends them: asked again for up to 60 s)."""
    wanted = {f"prefect.flow-run.{flow_run_id}": flow_run_id for flow_run_id in flow_run_ids}
    deadline = time.monotonic() + 60
    while True:
        events = prefect.call("POST", "/events/filter", {
            "filter": {"event": {"name": ["prefect.worker.submitted-flow-run"]}}, "limit": 50})["events"]
        takers = {wanted[related["prefect.resource.id"]]: event["resource"]["prefect.resource.name"]
                  for event in events for related in event["related"] if related["prefect.resource.id"] in wanted}
        if set(takers) == set(flow_run_ids) or time.monotonic() > deadline:
            assert set(takers) == set(flow_run_ids), events
            return takers
        time.sleep(2)


def test_up_again_starts_nothing_new(stack: tuple[Stack, dict[str, str]]) -> None:
    running, env = stack
    before = {name: service["pid"] for name, service in running.running().items()}
    assert set(before) == {"prefect-server", "mlflow-server", "worker-1", "worker-2"}
    _stack_command(env, "up", "--workers", "2")
    assert {name: service["pid"] for name, service in running.running().items()} == before


def test_the_prefect_walk_runs_on_the_stack_with_two_flow_runs_at_once_on_the_ducklake(
        stack: tuple[Stack, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from deployments.screenshots import add_model, register, run_demo, stack_prefect
    from tasks.warehouse.db import Warehouse

    running, env = stack
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    prefect = stack_prefect(running)
    register(prefect, 600)
    demo = run_demo(prefect, tmp_path, 900, at_once=True)
    assert {name: run["state_type"] for name, run in demo.runs.items()} == dict.fromkeys(demo.runs, "COMPLETED")
    # The rerun is submitted while the backfill runs, so the worker holding the backfill (one flow run at a time)
    # cannot take it: the workers' own submission events say each took one, and the two ran at once.
    takers = _workers_that_submitted(prefect, [demo.runs[name]["id"] for name in ("rerun", "backfill")])
    assert sorted(takers.values()) == ["babelbench-worker-1", "babelbench-worker-2"]
    spans = {name: (datetime.fromisoformat(demo.runs[name]["start_time"]),
                    datetime.fromisoformat(demo.runs[name]["end_time"])) for name in ("rerun", "backfill")}
    # at once: each started before the other ended (either may start first: the backfill's process can take longer
    # to reach its flow than the rerun's, though it was taken first)
    assert max(start for start, _ in spans.values()) < min(end for _, end in spans.values()), spans
    assert prefect.call("POST", "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": [
        "FAILED", "CRASHED"]}}}}) == []  # nothing failed, and no chained rebuild was set off by the corpus build

    monkeypatch.setenv(WAREHOUSE_ENV, running.warehouse)
    with Warehouse(running.home, read_only=True) as wh:  # the flow runs wrote the DuckLake, not a DuckDB file
        langs = {lang for (lang,) in wh.query("SELECT DISTINCT lang FROM documents")}
        flows = sorted(flow for (flow,) in wh.query("SELECT flow FROM runs WHERE status = 'completed'"))
    asked = [demo.runs[name]["parameters"]["params"]["langs"] for name in ("corpus", "backfill")]
    assert langs == {lang for group in asked for lang in group} and flows.count("corpus") >= 3
    assert not (running.home / "warehouse.duckdb").exists()

    prefect.set_pool_paused(True)
    try:
        scheduled = add_model(prefect, 300)
        assert [run["parameters"]["params"]["models"] for run in scheduled] == [["qwen"]]
    finally:
        for run in scheduled:
            prefect.call("DELETE", f"/flow_runs/{run['id']}")
        prefect.set_pool_paused(False)

    import mlflow

    client = mlflow.MlflowClient(running.mlflow_url)
    run = client.create_run(client.create_experiment("stack-check"))
    client.log_text(run.info.run_id, "kept by the server", "note.txt")
    stored = list((running.folder / "mlflow-artifacts").rglob("note.txt"))
    assert [path.read_text() for path in stored] == ["kept by the server"]
    with psycopg.connect(running.cluster.conninfo("mlflow")) as mlflow_db:
        assert ("stack-check",) in mlflow_db.execute("SELECT name FROM experiments").fetchall()
    with psycopg.connect(running.cluster.conninfo("prefect")) as prefect_db:
        names = {name for (name,) in prefect_db.execute("SELECT name FROM flow_run WHERE id = ANY(%s)",
                                                         [[demo.runs[n]["id"] for n in demo.runs]]).fetchall()}
    assert names == {run["name"] for run in demo.runs.values()}


def test_down_stops_every_process_of_the_stack_and_postgres(stack: tuple[Stack, dict[str, str]]) -> None:
    running, env = stack
    services = running.running()
    printed = _stack_command(env, "down")
    assert printed.startswith("stopped: ") and "postgres" in printed
    assert not any(process_alive(s["pid"], s["started"]) for s in services.values())
    assert not running.cluster.running() and running.running() == {}
    assert json.loads((running.folder / "stack.json").read_text()) == {}
