"""Evaluation flow: models answer a benchmark's instances, judges read the answers, metrics make the leaderboard."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.catalog import descendants, scope
from tasks.errors import ConfigError
from tasks.inference import InferenceConfig, check_gold_readers
from tasks.judging import JudgeConfig
from tasks.llm import Budget, load_registry
from tasks.metrics import ScoringConfig
from tasks.mlflow_genai import TraceSample
from tasks.qa import benchmark_definition
from tasks.recipe import recipe as recipe_of
from tasks.settings import resolve_home
from tasks.stages import (
    collect_outcomes,
    finish_run,
    flow_session,
    inference_stage,
    instance_cells,
    judging_stage,
    report_evaluation,
    scoring_stage,
)
from tasks.tracking import tracked_run
from tasks.warehouse import Warehouse


class EvaluateParams(BaseModel):
    """Parameters of an evaluation (a form in the Prefect UI)."""

    benchmark: str = Field(description="A built or imported benchmark.")
    models: list[str] = Field(min_length=1, description="Registry names of the models to evaluate.")
    langs: list[str] | None = Field(None, description="Question languages to evaluate; all of the benchmark's if empty.")
    settings: list[str] | None = Field(None, description="Settings to evaluate; all of the benchmark's if empty.")
    judges: list[str] = Field(default_factory=lambda: ["local"], description="Registry names of the judges "
                              "(ECLEKTIC: support judge; XRAG: the panel, majority vote). Not used for MKQA.")
    judge_own_system: bool = Field(False, description="Let a judge that is also one of the models judge answers"
                                   " (its own among them); refused otherwise.")
    inference: InferenceConfig = Field(default_factory=InferenceConfig)
    judging: JudgeConfig = Field(default_factory=JudgeConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    budget: Budget = Field(default_factory=Budget, description="Limits on this run's paid calls, tokens and USD.")
    traces: TraceSample = Field(default_factory=TraceSample, description="Which responses MLflow shows as traces.")
    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute with their descendants.")


def evaluation_cells(wh: Warehouse, params: EvaluateParams) -> list[tuple[str, str]]:
    """(setting, lang) pairs of the benchmark's instances that the parameters select; unknown names are errors."""
    cells = instance_cells(wh, params.benchmark)
    if not cells:
        raise ConfigError(f"benchmark {params.benchmark!r} has no instances; run `babelbench instances build"
                          f" --benchmark {params.benchmark}` (built) or `babelbench import …` (published)")
    for name, wanted, known in (("setting", params.settings, {s for s, _ in cells}),
                                ("language", params.langs, {lang for _, lang in cells})):
        unknown = sorted(set(wanted or ()) - known)
        if unknown:
            raise ConfigError(f"benchmark {params.benchmark!r} has no {name} {', '.join(unknown)}"
                              f" (it has: {', '.join(sorted(known))})")
    return [(s, lang) for s, lang in cells
            if (not params.settings or s in params.settings) and (not params.langs or lang in params.langs)]


def check_judges(params: EvaluateParams) -> None:
    """Refuse a judge that is also a contestant: judging its own answers pointwise, a model would grade itself
    (self-preference is the documented bias of LLM judges), unless the user says so (``judge_own_system``)."""
    own = sorted(set(params.judges) & set(params.models))
    if own and not params.judge_own_system:
        raise ConfigError(f"{', '.join(own)} would judge {'its' if len(own) == 1 else 'their'} own answers (in both"
                          " --judges and --models): choose another judge, or pass --judge-own-system to allow it")


@flow(name="evaluate", log_prints=True)
def evaluate_flow(params: EvaluateParams) -> list[dict]:
    """Inference per (setting, language, model), judging per judge, then one leaderboard per model."""
    home = str(resolve_home(params.home))
    force = frozenset(descendants(scope("evaluate"), params.force))
    with flow_session(home) as wh, tracked_run(wh, "evaluate", params, flow_run.get_id()) as run:
        recipe, _ = benchmark_definition(wh, params.benchmark)
        cells = evaluation_cells(wh, params)
        kind = recipe_of(recipe).judge
        if kind:
            check_judges(params)
        registry = load_registry(home=Path(home))
        check_gold_readers(wh, registry, [*params.models, *(params.judges if kind else ())], params.benchmark)
        futures: dict[str, dict] = {}
        for model in params.models:
            judged = []
            for setting, lang in cells:
                # "/" between parts: Rich renders ":closed_book:" in a log line as an emoji
                cell = f"{params.benchmark}/{setting}/{lang}/{model}"
                responses = inference_stage.submit(home, cell, params.benchmark, setting, lang, model, params.inference,
                                                   params.budget, force, run.run_id)
                futures[cell] = {"inference": responses}
                for judge in params.judges if kind else ():
                    judged.append(judging_stage.submit(
                        home, f"{cell}/{judge}", params.benchmark, setting, lang, model, judge, kind, params.judging,
                        responses, params.budget, force, run.run_id))
                    futures[f"{cell}/{judge}"] = {"judging": judged[-1]}
                if not kind:
                    judged.append(responses)
            scored = f"{params.benchmark}/{model}"
            futures[scored] = {"scoring": scoring_stage.submit(
                home, scored, params.benchmark, recipe, model, params.judges if kind else [], params.scoring, judged,
                force, run.run_id)}
        outcomes = collect_outcomes(futures)
        report_evaluation(run.results(), params.benchmark, params.models, run, params.traces)
        return finish_run(run, "evaluate", outcomes)
