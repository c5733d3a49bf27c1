"""Stages whose work is model calls: one client per stage run, one budget per flow run, retries of the unfinished.

Model stages spend from the flow run's one budget ledger (:func:`run_ledger`).
A cell whose rows include items left unfinished — stopped by the budget or
by failed calls — is recomputed on the next run even when its fingerprint is
current: what already succeeded comes back from the call cache for free, so
the rerun pays only for what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prefect.states import State

from tasks.llm import Budget, BudgetLedger, LLMClient, load_registry, run_ledger
from tasks.stage import ReadFields, Stage, StageOutput, StageRef, run_stage
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse
from tasks.warehouse.db import Warehouse

UNFINISHED = ("call_failed", "skipped_budget")


def client_for(home: str, wh: Warehouse) -> LLMClient:
    """A client over the home's model registry (``models.yaml``, ``$BABELBENCH_MODELS`` or the built-in one)."""
    return LLMClient(wh, load_registry(home=Path(home)))


def unfinished(wh: Warehouse, table: str, where: str, params: list[object]) -> bool:
    """Whether a cell's rows include items a rerun should retry."""
    return bool(wh.scalar(f"SELECT count(*) FROM {table} WHERE {where} AND list_contains(?, status)", [*params, list(UNFINISHED)]))


PaidWork = Callable[[LLMClient, BudgetLedger, str], StageOutput]


def run_paid(home: str, stage: Stage, cell: str, read: ReadFields, inputs: dict[str, StageRef], work: PaidWork, *,
             retry: bool, force: frozenset[str], budget: Budget, run_id: str) -> StageRef | State[StageRef]:
    """A stage whose work is model calls: ``work(client, ledger, fingerprint)`` spends from the run's one ledger.

    ``retry`` recomputes a current cell whose rows include unfinished items.
    """
    wh = shared_warehouse(home)
    return as_task_result(run_stage(
        wh, stage, cell, read, inputs, lambda fp: work(client_for(home, wh), run_ledger(run_id, budget), fp),
        force=forced(stage.name, force) or retry, run_id=run_id))
