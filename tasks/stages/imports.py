"""The import stage as a Prefect task: one cell per imported benchmark (or CLIR collection).

:func:`tasks.imports.common.import_dataset` does the work (read, check, one
write transaction, a cache hit when the same files were imported with the same
recipe and languages); this wrapper adds the house retry policy and shows a
cache hit as ``Cached`` in the Prefect UI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect.states import State

from tasks.catalog import IMPORT
from tasks.imports.common import import_dataset
from tasks.stage import StageRef
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task


@stage_task(IMPORT.name)
def import_stage(home: str, cell: str, dataset: str, source: str, name: str | None, langs: list[str] | None,
                 options: dict[str, Any], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Import one published dataset as benchmark (or collection) ``name``; unchanged files are a cache hit."""
    wh = shared_warehouse(home)
    return as_task_result(import_dataset(wh, dataset, Path(source), name, langs, force=forced(IMPORT.name, force),
                                         run_id=run_id, **options))
