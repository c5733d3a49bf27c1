"""A run whose process died is marked crashed by the next start: in ``runs``, in MLflow and in Prefect.

The dead process is simulated the way it looks afterwards: a ``runs`` row left
``running``, its MLflow run left RUNNING and its Prefect flow run left Running
on the API — nothing in the dead process could have ended them.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.states import Running
from pydantic import BaseModel

from tasks.tracking import mark_crashed_runs, tracked_run, tracking_uri
from tasks.version import code_version
from tasks.warehouse.db import Warehouse


class _Params(BaseModel):
    home: str


@flow(name="babelbench-crash-probe")
def _probe() -> None:
    """A flow whose run is created on the API and left Running, as a killed process leaves it."""


def _dead_run(wh: Warehouse, flow_run_id: str) -> tuple[str, str]:
    """Rows as a process killed mid-flow leaves them; returns (run_id, mlflow run id)."""
    mlflow.set_tracking_uri(tracking_uri(wh.home))
    experiment = mlflow.set_experiment("babelbench-crash-probe")
    mlflow_run = MlflowClient(tracking_uri(wh.home)).create_run(experiment.experiment_id)
    run_id = uuid.uuid4().hex
    with wh.transaction() as cur:
        cur.execute("INSERT INTO runs (run_id, flow, started_at, status, params, code_version, prefect_flow_run_id,"
                    " mlflow_run_id, pid, host) VALUES (?, 'corpus', now(), 'running', '{}', ?, ?, ?, 999999999, 'gone')",
                    [run_id, code_version(), flow_run_id, mlflow_run.info.run_id])
    return run_id, mlflow_run.info.run_id


def test_next_run_marks_a_dead_process_run_crashed_everywhere(prefect_api: None, home: Path) -> None:
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run(_probe, state=Running())
    with Warehouse(home) as wh:
        dead, dead_mlflow = _dead_run(wh, str(flow_run.id))
        with tracked_run(wh, "corpus", _Params(home=str(home))) as run:
            live = run.run_id
            run.finish([])
        rows = dict(wh.query("SELECT run_id, status FROM runs"))
        message = wh.query("SELECT message FROM runs WHERE run_id = ?", [dead])[0][0]
        pid = wh.query("SELECT pid FROM runs WHERE run_id = ?", [live])[0][0]
    assert rows == {dead: "crashed", live: "completed"}
    assert "died" in message
    assert pid == os.getpid()
    assert MlflowClient(tracking_uri(home)).get_run(dead_mlflow).info.status == "KILLED"
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(flow_run.id).state.type.value == "CRASHED"


def test_a_live_run_of_this_process_is_not_marked_crashed(home: Path) -> None:
    with Warehouse(home) as wh:
        with tracked_run(wh, "corpus", _Params(home=str(home))) as run:
            marked = mark_crashed_runs(wh)
            status = wh.query("SELECT status FROM runs WHERE run_id = ?", [run.run_id])[0][0]
            run.finish([])
    assert (marked, status) == ([], "running")
