"""The inference stage as a Prefect task: one cell per (benchmark, setting, language, model)."""

from __future__ import annotations

from pathlib import Path

from prefect.states import State

from tasks.catalog import INFERENCE
from tasks.imports.responses import imported_inference
from tasks.inference.prompting import TEMPLATES, InferenceConfig
from tasks.inference.respond import answer_instances
from tasks.llm import Budget, load_registry, recipe_templates, template_hash
from tasks.recipe import recipe as recipe_of
from tasks.stage import ReadFields, StageRef, rows_digest
from tasks.stages.orchestration import as_task_result, shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished


def model_identity(home: str, model: str) -> dict[str, str]:
    """What a registry name stands for: pointing the name at another model or endpoint recomputes its cells."""
    spec = load_registry(home=Path(home)).get(model)
    return {"backend": spec.backend, "model": spec.model, "mode": spec.mode, "base_url": spec.base_url or ""}


@stage_task("inference")
def inference_stage(home: str, cell: str, benchmark: str, setting: str, lang: str, model: str, config: InferenceConfig,
                    budget: Budget, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Every instance of the cell asked of ``model``; instances that failed or were budget-stopped are retried.
    A cell of imported responses (``babelbench import responses``) is recorded as it is, without a call."""
    wh = shared_warehouse(home)
    imported = imported_inference(wh, INFERENCE, cell, benchmark, setting, lang, model, run_id)
    if imported is not None:  # `import responses` brought them: never called, never replaced
        return as_task_result(imported)
    where = "benchmark = ? AND setting = ? AND lang = ?"
    recipe = recipe_of(wh.scalar("SELECT recipe FROM qa_benchmarks WHERE benchmark = ?", [benchmark]))
    shown = "instance_id, question, documents, prompt_hint" + (", extra" if recipe.extra else "")
    read = ReadFields.of(config, *InferenceConfig.model_fields, model=model_identity(home, model),
                         templates=[template_hash(name) for name in (*TEMPLATES, *recipe_templates(recipe.name))],
                         instances=rows_digest(wh, f"SELECT {shown} FROM instances WHERE {where} ORDER BY ALL",
                                               [benchmark, setting, lang]))
    return run_paid(  # the cell's own instances are in ``read``: other languages' instances never recompute it
        home, INFERENCE, cell, read, {},
        lambda client, ledger, fp: answer_instances(wh, client, benchmark, setting, lang, model, config, fp,
                                                    budget=ledger),
        retry=unfinished(wh, "responses", f"{where} AND model = ?", [benchmark, setting, lang, model]),
        force=force, budget=budget, run_id=run_id)
