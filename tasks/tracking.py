"""Run bookkeeping: a ``runs`` row in the warehouse and an MLflow run per flow run.

MLflow uses ``MLFLOW_TRACKING_URI`` when set, else a SQLite store and an
artifact folder inside the babelbench home, so ``mlflow ui`` can be pointed at
it with no server to run during the flow.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tasks.mlflow_store import TRACKING_ENV, open_store
from tasks.processes import process_alive
from tasks.stage import StageRef
from tasks.version import code_version
from tasks.warehouse.db import Warehouse, snapshot_label

log = logging.getLogger(__name__)


#: MLflow tags naming where a run read the warehouse: its location, and the snapshot its logged results come from
WAREHOUSE_TAG = "babelbench.warehouse"
SNAPSHOT_TAG = "babelbench.warehouse.snapshot"


def mlflow_name(name: str) -> str:
    """A metric name MLflow accepts: ``ndcg@10`` → ``ndcg_at_10``, ``en>de`` → ``en-de``."""
    return re.sub(r"[^A-Za-z0-9_.\- /:]", "-", name.replace("@", "_at_"))


def tracking_uri(home: Path) -> str:
    return os.environ.get(TRACKING_ENV) or f"sqlite:///{home / 'mlflow.db'}"


@dataclass(frozen=True)
class StageOutcome:
    """A stage cell's end state in a flow run: its reference, or why it failed."""

    stage: str
    cell: str
    ref: StageRef | None
    error: str | None = None

    @property
    def status(self) -> str:
        return self.ref.status if self.ref else "failed"

    def as_row(self) -> dict[str, Any]:
        ref = self.ref
        return {
            "stage": self.stage, "cell": self.cell, "status": self.status,
            "rows": ref.rows if ref else None, "issues": ref.issues if ref else None,
            "fingerprint": ref.fingerprint[:12] if ref else "",
            "message": (ref.message if ref else self.error) or "",
        }


def _flat_params(params: BaseModel) -> dict[str, str]:
    return {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else str(v)
            for k, v in params.model_dump(mode="json").items()}


class TrackedRun:
    """One flow run being tracked; :meth:`finish` records the outcomes everywhere.

    Its MLflow run starts on first use (:meth:`track`), not with the flow: opening MLflow's store costs seconds,
    and MLflow is where results are read — evaluations, and the prompts and spend of the models that built a
    benchmark. Flows that log results track from the start; a build flow when its cells used a model
    (:func:`tasks.stages.reporting.finish_run`). Every run's bookkeeping is its ``runs`` row, its ``artifacts``
    rows and its Prefect flow run's artifacts.
    """

    def __init__(self, wh: Warehouse, flow: str, params: BaseModel, run_id: str, prefect_flow_run_id: str | None) -> None:
        self.wh, self.flow, self.params, self.run_id = wh, flow, params, run_id
        self._prefect_flow_run_id = prefect_flow_run_id
        self._mlflow_run: Any = None

    @property
    def tracked(self) -> bool:
        """Whether this flow run has an MLflow run."""
        return self._mlflow_run is not None

    def track(self) -> Any:
        """This flow run's active MLflow run, started (config, code version) and linked to the ``runs`` row on
        first use; MLflow's store is opened here (:func:`tasks.mlflow_store.open_store`)."""
        if self._mlflow_run is not None:
            return self._mlflow_run
        import mlflow

        open_store(tracking_uri(self.wh.home), self.wh.home, f"babelbench-{self.flow}")
        active = mlflow.start_run(run_name=f"{self.flow}-{self.run_id[:8]}")
        mlflow.set_tags({"babelbench.flow": self.flow, "babelbench.run_id": self.run_id, "code_version": code_version(),
                         "prefect.flow_run_id": self._prefect_flow_run_id or "", WAREHOUSE_TAG: self.wh.path,
                         SNAPSHOT_TAG: snapshot_label(self.wh.snapshot())})
        mlflow.log_params(_flat_params(self.params))
        with self.wh.transaction() as cur:
            cur.execute("UPDATE runs SET mlflow_run_id = ? WHERE run_id = ?", [active.info.run_id, self.run_id])
        self._mlflow_run = active
        return active

    def results(self, as_of: int | None = None) -> Warehouse:
        """The warehouse to read the results this run logs from, held at one snapshot (``as_of``, else the latest):
        the MLflow run names it (tag ``babelbench.warehouse.snapshot``), so ``babelbench leaderboard --as-of`` shows
        the table it logged. The embedded warehouse keeps no snapshots: it is read as it is, and the tag says so."""
        pinned = self.wh.at(as_of) if as_of is not None else self.wh.pinned()
        if self.tracked:
            import mlflow

            mlflow.set_tag(SNAPSHOT_TAG, snapshot_label(pinned.snapshot()))
        return pinned

    @property
    def mlflow_run_id(self) -> str:
        return self.track().info.run_id

    @property
    def experiment_id(self) -> str:
        return self.track().info.experiment_id

    def finish(self, outcomes: Sequence[StageOutcome]) -> None:
        """End the ``runs`` row; in MLflow (when this run has an MLflow run), the cell counts as tags and every
        cell (status, rows, issues, fingerprint, seconds, message) as one table, ``stages.json`` — bookkeeping,
        not metrics to chart."""
        counts = {status: sum(1 for o in outcomes if o.status == status) for status in ("computed", "cached", "failed")}
        if self.tracked:
            self._log_outcomes(outcomes, counts)
        status = "failed" if counts["failed"] else "completed"
        failures = "; ".join(f"{o.stage}[{o.cell}]: {o.error}" for o in outcomes if o.error)
        with self.wh.transaction() as cur:
            cur.execute("UPDATE runs SET finished_at = now(), status = ?, message = ? WHERE run_id = ?",
                        [status, failures or None, self.run_id])

    def end(self, status: str) -> None:
        """End the MLflow run, if one was started, with MLflow's ``status``."""
        if self.tracked:
            import mlflow

            mlflow.end_run(status)

    def _log_outcomes(self, outcomes: Sequence[StageOutcome], counts: dict[str, int]) -> None:
        import mlflow
        import pandas as pd

        mlflow.set_tags({f"babelbench.cells.{status}": str(count) for status, count in counts.items()})
        seconds = {(stage, cell): total for stage, cell, total in self.wh.query(
            "SELECT stage, cell, sum(seconds) FROM artifacts WHERE run_id = ? GROUP BY ALL", [self.run_id])}
        if outcomes:
            mlflow.log_table(pd.DataFrame([o.as_row() | {"fingerprint": o.ref.fingerprint if o.ref else None,
                                                         "seconds": seconds.get((o.stage, o.cell))}
                                           for o in outcomes]), "stages.json")


_active_runs: set[str] = set()
_active_lock = threading.Lock()


def mark_crashed_runs(wh: Warehouse) -> list[str]:
    """Mark ``crashed`` every run left ``running`` by a process that died; return their run ids.

    Several processes may run flows on one warehouse at once, so a ``running``
    row is taken for a crash only when its process is gone: one of this
    process's rows that is not among its live runs, a row of another process
    on this host whose pid no longer exists, or a row recorded on another host
    (a warehouse lives on one machine's disk, so a run recorded elsewhere — a
    restored copy, a renamed host — cannot still be running against it). Its
    MLflow run is ended as KILLED and its Prefect flow run, still shown as
    Running in the UI, is set to Crashed.
    """
    with _active_lock:
        live = set(_active_runs)
    here, me = socket.gethostname(), os.getpid()
    stale = [(run_id, flow_run_id, mlflow_run_id) for run_id, flow_run_id, mlflow_run_id, pid, host in wh.query(
        "SELECT run_id, prefect_flow_run_id, mlflow_run_id, pid, host FROM runs WHERE status = 'running'")
        if not _may_be_alive(run_id, pid, host, live, here, me)]
    if not stale:
        return []
    with wh.transaction() as cur:
        cur.executemany(
            "UPDATE runs SET status = 'crashed', finished_at = coalesce(finished_at, now()),"
            " message = coalesce(message, 'the process running this flow died before it finished') WHERE run_id = ?",
            [[run_id] for run_id, _, _ in stale])
    for run_id, flow_run_id, mlflow_run_id in stale:
        log.warning("run %s was left running by a process that died: marked crashed", run_id)
        if mlflow_run_id:
            _end_mlflow_run(wh.home, mlflow_run_id)
        if flow_run_id:
            _crash_prefect_flow_run(flow_run_id)
    return [run_id for run_id, _, _ in stale]


def _may_be_alive(run_id: str, pid: int | None, host: str | None, live: set[str], here: str, me: int) -> bool:
    """Whether the process that recorded a ``running`` row may still be running it (see :func:`mark_crashed_runs`)."""
    if pid is None or host != here:
        return False
    if pid == me:
        return run_id in live
    return process_alive(pid)


def _end_mlflow_run(home: Path, mlflow_run_id: str) -> None:
    """End a dead process's MLflow run as KILLED if it still shows as running; failures are only logged."""
    try:
        client = open_store(tracking_uri(home), home)  # its schema checked as cheaply as for the run to come
        if client.get_run(mlflow_run_id).info.status == "RUNNING":
            client.set_terminated(mlflow_run_id, status="KILLED")
    except Exception as exc:  # noqa: BLE001 - the warehouse row is what matters; MLflow is a view of it
        log.warning("could not end MLflow run %s: %s", mlflow_run_id, exc)


def _crash_prefect_flow_run(flow_run_id: str) -> None:
    """Set a dead process's flow run to Crashed if Prefect still shows it running; failures are only logged."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(uuid.UUID(flow_run_id)).state
            if state is not None and not state.is_final():
                client.set_flow_run_state(uuid.UUID(flow_run_id), Crashed(
                    message="the babelbench process running this flow died; marked crashed by the next run"), force=True)
    except Exception as exc:  # noqa: BLE001 - another server's run, an unreachable API: the warehouse row is what matters
        log.warning("could not mark Prefect flow run %s crashed: %s", flow_run_id, exc)


@contextmanager
def tracked_run(wh: Warehouse, flow: str, params: BaseModel, prefect_flow_run_id: str | None = None, *,
                logs: bool = True) -> Iterator[TrackedRun]:
    """Open a ``runs`` row around a flow run, and its MLflow run from the start when the flow ``logs`` results
    there (else later, if ever: :class:`TrackedRun`). A flow that raises ends its MLflow run, if it has one, as
    FAILED."""
    run_id = uuid.uuid4().hex
    mark_crashed_runs(wh)
    with wh.transaction() as cur:
        cur.execute(
            "INSERT INTO runs (run_id, flow, started_at, status, params, code_version, prefect_flow_run_id, pid, host)"
            " VALUES (?, ?, now(), 'running', ?, ?, ?, ?, ?)",
            [run_id, flow, params.model_dump_json(), code_version(), prefect_flow_run_id, os.getpid(), socket.gethostname()])
    with _active_lock:
        _active_runs.add(run_id)
    tracked = TrackedRun(wh, flow, params, run_id, prefect_flow_run_id)
    try:
        if logs:
            tracked.track()
        yield tracked
    except BaseException as exc:
        with wh.transaction() as cur:
            cur.execute("UPDATE runs SET finished_at = now(), status = 'failed', message = ? WHERE run_id = ?",
                        [f"{type(exc).__name__}: {exc}", run_id])
        try:
            tracked.end("FAILED")
        except Exception as mlflow_exc:  # noqa: BLE001 - the flow's own error is the one to raise; MLflow is a view
            log.warning("could not mark the MLflow run of %s run %s failed: %s", flow, run_id, mlflow_exc)
        raise
    else:
        tracked.end("FINISHED")
    finally:
        with _active_lock:
            _active_runs.discard(run_id)
