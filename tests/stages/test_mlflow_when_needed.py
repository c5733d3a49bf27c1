"""A flow run has an MLflow run when it has results to show there: logged results, or cells a model built (their
prompts and spend); an import, whatever it computed, and a command whose every cell was a cache hit open no MLflow
store (it costs seconds) and leave their ``runs`` row, ``artifacts`` rows and Prefect flow run."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from pydantic import BaseModel

from flows.imports import ImportParams, import_flow
from tasks.mlflow_store import open_store
from tasks.stages.reporting import finish_run
from tasks.tracking import tracked_run, tracking_uri
from tasks.warehouse.db import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"
TEMPLATES = Path(__file__).resolve().parents[2] / "tasks" / "llm" / "templates"


def test_an_import_uses_no_model_so_it_makes_no_mlflow_run(prefect_api: None, home: Path) -> None:
    params = ImportParams(dataset="mkqa", source=str(SAMPLE), name="mk", langs=["en"], home=str(home))
    assert [row["status"] for row in import_flow(params)] == ["computed"]
    assert [row["status"] for row in import_flow(params)] == ["cached"]
    assert [row["status"] for row in import_flow(params.model_copy(update={"force": True}))] == ["computed"]
    with Warehouse(home) as wh:
        runs = wh.query("SELECT status, mlflow_run_id FROM runs WHERE flow = 'import' ORDER BY started_at")
        computed = wh.scalar("SELECT count(*) FROM artifacts WHERE stage = 'import' AND status = 'computed'")
    assert runs == [("completed", None)] * 3 and computed == 2
    assert not (home / "mlflow.db").exists()


class _Params(BaseModel):
    home: str


def _cell(wh: Warehouse, run_id: str, status: str, template: str) -> None:
    """A cell of ``run_id`` as a stage records it, whose config names ``template`` by the hash of its file."""
    digest = hashlib.sha256((TEMPLATES / f"{template}.j2").read_text(encoding="utf-8").encode()).hexdigest()
    with wh.transaction() as cur:
        cur.execute("INSERT INTO artifacts (run_id, stage, stage_version, cell, fingerprint, config, code_version,"
                    " status, started_at, finished_at, seconds) VALUES (?, 'translate', 1, 'de', ?, ?, 'v', ?, now(),"
                    " now(), 1)", [run_id, f"fp-{status}", json.dumps({"translator": {"template": digest}}), status])


@pytest.mark.parametrize("status", ["computed", "cached"])
def test_a_build_whose_computed_cells_read_a_prompt_is_tracked_with_it(prefect_api: None, home: Path,
                                                                         status: str) -> None:
    with Warehouse(home) as wh, tracked_run(wh, "translate", _Params(home=str(home)), logs=False) as run:
        _cell(wh, run.run_id, status, "translate")
        finish_run(run, "translate", [])
        mlflow_run_id = wh.scalar("SELECT mlflow_run_id FROM runs WHERE run_id = ?", [run.run_id])
    if status == "cached":  # a model wrote it in an earlier run, which is where its prompt is linked
        assert mlflow_run_id is None
        return
    logged = MlflowClient(tracking_uri(home)).get_run(mlflow_run_id)
    assert logged.info.status == "FINISHED" and logged.data.tags["babelbench.cost.calls"] == "0"
    assert [link["name"] for link in json.loads(logged.data.tags["mlflow.linkedPrompts"])] == ["babelbench.translate"]


def test_a_build_flow_that_raises_has_no_mlflow_run_and_a_logging_one_ends_failed(home: Path) -> None:
    with Warehouse(home) as wh:
        for flow, logs in (("corpus", False), ("report", True)):
            params = _Params(home=str(home))
            with pytest.raises(RuntimeError, match="disk full"), tracked_run(wh, flow, params, logs=logs):
                raise RuntimeError("disk full")
        rows = {flow: (status, message, mlflow_run_id) for flow, status, message, mlflow_run_id in wh.query(
            "SELECT flow, status, message, mlflow_run_id FROM runs")}
    assert all(status == "failed" and "disk full" in message for status, message, _ in rows.values())
    assert rows["corpus"][2] is None
    assert MlflowClient(tracking_uri(home)).get_run(rows["report"][2]).info.status == "FAILED"


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
