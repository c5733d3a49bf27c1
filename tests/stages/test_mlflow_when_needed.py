"""A flow run has an MLflow run when it has something to show there: a computed or failed cell, logged results,
or an error; a command whose every cell was a cache hit opens no MLflow store (it costs seconds) and leaves only
its ``runs`` row and its Prefect flow run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from pydantic import BaseModel

from flows.imports import ImportParams, import_flow
from tasks.mlflow_store import open_store
from tasks.tracking import tracked_run, tracking_uri
from tasks.warehouse.db import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"


def _mlflow_runs(home: Path, experiment: str) -> list:
    found = MlflowClient(tracking_uri(home)).get_experiment_by_name(experiment)
    return [] if found is None else MlflowClient(tracking_uri(home)).search_runs([found.experiment_id])


def test_a_cached_import_makes_no_mlflow_run_and_a_computed_one_does(prefect_api: None, home: Path) -> None:
    params = ImportParams(dataset="mkqa", source=str(SAMPLE), name="mk", langs=["en"], home=str(home))
    assert [row["status"] for row in import_flow(params)] == ["computed"]
    assert [row["status"] for row in import_flow(params)] == ["cached"]
    with Warehouse(home) as wh:
        runs = wh.query("SELECT status, mlflow_run_id FROM runs WHERE flow = 'import' ORDER BY started_at")
    assert [status for status, _ in runs] == ["completed", "completed"]
    computed, cached = (mlflow_run_id for _, mlflow_run_id in runs)
    assert cached is None
    (logged,) = _mlflow_runs(home, "babelbench-import")
    assert logged.info.run_id == computed and logged.info.status == "FINISHED"
    assert logged.data.tags["babelbench.cells.computed"] == "1"

    forced = import_flow(params.model_copy(update={"force": True}))  # computed again: a second MLflow run
    assert [row["status"] for row in forced] == ["computed"]
    assert len(_mlflow_runs(home, "babelbench-import")) == 2


class _Params(BaseModel):
    home: str


def test_a_flow_that_raises_before_logging_still_ends_with_a_failed_mlflow_run(home: Path) -> None:
    with Warehouse(home) as wh:
        with pytest.raises(RuntimeError, match="disk full"):
            with tracked_run(wh, "corpus", _Params(home=str(home)), logs=False):
                raise RuntimeError("disk full")
        status, message, mlflow_run_id = wh.query("SELECT status, message, mlflow_run_id FROM runs")[0]
    assert status == "failed" and "disk full" in message
    assert MlflowClient(tracking_uri(home)).get_run(mlflow_run_id).info.status == "FAILED"


def test_a_flow_that_logs_has_its_mlflow_run_from_the_start(home: Path) -> None:
    with Warehouse(home) as wh, tracked_run(wh, "report", _Params(home=str(home))) as run:
        assert run.tracked
        stored = wh.scalar("SELECT mlflow_run_id FROM runs WHERE run_id = ?", [run.run_id])
        assert stored == run.mlflow_run_id
        run.finish([])
    assert MlflowClient(tracking_uri(home)).get_run(stored).info.status == "FINISHED"


def test_opening_one_home_s_store_does_not_send_another_home_s_runs_there(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    open_store(tracking_uri(first), first, "babelbench-import")  # MLflow itself copies URI and experiment there
    assert "MLFLOW_TRACKING_URI" not in os.environ and "MLFLOW_EXPERIMENT_ID" not in os.environ
    assert tracking_uri(second) == f"sqlite:///{second / 'mlflow.db'}"

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'team.db'}")  # a user's choice stays theirs
    open_store(tracking_uri(first), first, "babelbench-import")
    assert tracking_uri(second) == f"sqlite:///{tmp_path / 'team.db'}"
