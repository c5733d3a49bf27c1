"""The thin Prefect layer over plain stage functions: retries, cache-hit states, shared warehouses.

Stage logic lives in plain functions (testable without Prefect); this module
turns them into tasks that retry transient failures with backoff and jitter,
and that show a cache hit as a ``Cached`` state in the Prefect UI.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.futures import PrefectFuture
from prefect.settings import PREFECT_TASKS_REFRESH_CACHE
from prefect.states import Completed, State
from prefect.tasks import exponential_backoff

from tasks import compute
from tasks.home import open_warehouse
from tasks.retry import is_transient
from tasks.settings import HOME_ENV
from tasks.stage import StageRef
from tasks.text.languages import reload_rules
from tasks.tracking import StageOutcome
from tasks.warehouse.db import Warehouse

R = TypeVar("R")
_TASK_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

_warehouses: dict[Path, Warehouse] = {}
_warehouses_lock = threading.Lock()


def shared_warehouse(home: str | Path) -> Warehouse:
    """The process-wide warehouse for ``home``: migrated once; the DuckDB file itself is held only per operation.

    Other processes (another flow run, ``babelbench sql``) use the same file
    between this process's operations; see ``tasks/warehouse/db.py``.
    """
    key = Path(home).resolve()
    with _warehouses_lock:
        if key not in _warehouses:
            _warehouses[key] = open_warehouse(key)
        return _warehouses[key]


def close_shared_warehouse(home: str | Path) -> None:
    """Forget the process-wide warehouse and release the DuckDB file now rather than after its short linger."""
    with _warehouses_lock:
        wh = _warehouses.pop(Path(home).resolve(), None)
    if wh is not None:
        wh.close()


@contextmanager
def flow_session(home: str) -> Iterator[Warehouse]:
    """The warehouse for one flow run; on exit the Dask cluster and the DuckDB file are released.

    Other flow runs may use the same home at the same time (each process holds
    the DuckDB file only while an operation runs). MLflow is not touched here:
    the flows that log to it open its store in :func:`tasks.tracking.tracked_run`.
    """
    try:
        wh = shared_warehouse(home)
        # the home's language-rule overrides apply to this run, in this process and the Dask workers it starts
        os.environ[HOME_ENV] = str(wh.home)
        reload_rules()
        yield wh
    finally:
        compute.shutdown()
        close_shared_warehouse(home)


def _retry_only_transient(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    exc = state.result(raise_on_failure=False)
    return isinstance(exc, BaseException) and is_transient(exc)


def stage_task(name: str, *, retries: int = 3) -> Callable[[Callable[..., StageRef]], Task[..., StageRef]]:
    """Decorate a stage wrapper as a Prefect task with the house retry policy.

    Prefect's own result cache is off: the warehouse is the cache (see
    ``tasks.stage``); ``refresh_cache`` on the task or ``PREFECT_TASKS_REFRESH_CACHE``
    force a recompute through :func:`forced`.
    """
    return task(
        name=name,
        retries=retries,
        retry_delay_seconds=exponential_backoff(backoff_factor=5),
        retry_jitter_factor=0.5,
        retry_condition_fn=_retry_only_transient,
        cache_policy=NO_CACHE,
        persist_result=False,
        task_run_name=name + "[{cell}]",
    )


def forced(stage: str, force: frozenset[str] | set[str]) -> bool:
    """Whether this run must recompute ``stage`` (CLI ``--force`` or Prefect's refresh-cache setting)."""
    return stage in force or bool(PREFECT_TASKS_REFRESH_CACHE.value())


def as_task_result(ref: StageRef) -> StageRef | State[StageRef]:
    """A cache hit becomes a ``Cached`` completed state so the Prefect UI shows it as one."""
    if ref.status == "cached":
        return Completed(name="Cached", data=ref, message=f"fingerprint {ref.fingerprint[:12]} is current")
    return ref


def collect_outcomes(futures: Mapping[str, Mapping[str, PrefectFuture[Any]]]) -> list[StageOutcome]:
    """Wait for every submitted stage cell and turn its final state into an outcome.

    A failed cell becomes an outcome with its error text, so one bad language
    is reported by name while the others finish. A cell that never ran names
    the failed cell that stopped it and that cell's error, so its row says why
    without the log: Prefect leaves such a task run ``NotReady`` with a message
    naming the upstream task run it waited for, which is followed back (through
    other cells that did not run) to the failure.
    """
    cells = [(stage, cell, future) for cell, stages in futures.items() for stage, future in stages.items()]
    for _, _, future in cells:
        future.wait()
    states = {future.task_run_id: (stage, cell, future.state) for stage, cell, future in cells}

    def blocked_by(state: State[Any]) -> str | None:
        match = _TASK_RUN_ID.search(state.message or "")
        upstream = states.get(UUID(match.group())) if match else None
        if upstream is None:
            return None
        stage, cell, upstream_state = upstream
        if upstream_state.is_failed() or upstream_state.is_crashed():
            return f"{stage}[{cell}] failed: {_failure(upstream_state)}"
        return blocked_by(upstream_state)

    outcomes = []
    for stage, cell, future in cells:
        state = states[future.task_run_id][2]
        if state.is_completed():
            outcomes.append(StageOutcome(stage, cell, future.result()))
        elif state.is_failed() or state.is_crashed():
            outcomes.append(StageOutcome(stage, cell, None, _failure(state)))
        else:  # never started: Prefect does not run a task whose upstream failed
            reason = blocked_by(state) or f"an upstream stage of {cell} failed ({state.message or state.name})"
            outcomes.append(StageOutcome(stage, cell, None, f"not run: {reason}"))
    return outcomes


def _failure(state: State[Any]) -> str:
    """A failed task run's error as ``Type: message``, the form the stage's ``artifacts`` row has."""
    result = state.result(raise_on_failure=False)
    return f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else (state.message or state.name)
