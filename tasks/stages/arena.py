"""The arena's stages: pairwise judging per (benchmark, language, judge), then ratings and the surrogate per
(benchmark, judge), each over this run's battles (:mod:`tasks.arena.standings`)."""

from __future__ import annotations

import logging

from prefect.artifacts import create_markdown_artifact
from prefect.states import State

from tasks.arena.battles import TEMPLATE, ArenaConfig, JudgingEstimate, judge_battles
from tasks.arena.bradley_terry import Ties
from tasks.arena.standings import RUN_BATTLES, STATUSES, fit_surrogate, rate, system_windows
from tasks.catalog import ARENA_JUDGING, ARENA_RATINGS, ARENA_SURROGATE
from tasks.llm import Budget, template_hash
from tasks.mlflow_genai import (
    RUN_TYPE,
    TraceSample,
    battles_traces,
    evaluation_dataset,
    link_templates,
    show_features,
    write_traces,
)
from tasks.stage import ReadFields, StageRef, digest, rows_digest, run_stage
from tasks.stages.inference import model_identity
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished
from tasks.tracking import TrackedRun, tracking_uri
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)


@stage_task("arena-judging")
def arena_judging_stage(home: str, cell: str, benchmark: str, lang: str, models: list[str], judge: str,
                        config: ArenaConfig, budget: Budget, force: frozenset[str],
                        run_id: str) -> StageRef | State[StageRef]:
    """The judge's battles on the language's sampled queries (see :mod:`tasks.arena.battles`)."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *ArenaConfig.model_fields, judge=model_identity(home, judge), models=sorted(models),
                         template=template_hash(TEMPLATE),
                         responses=rows_digest(wh, "SELECT instance_id, model, status, answer FROM responses"
                                                   " WHERE benchmark = ? AND lang = ? ORDER BY ALL", [benchmark, lang]),
                         instances=rows_digest(wh, "SELECT instance_id, setting FROM instances WHERE benchmark = ?"
                                                   " AND lang = ? ORDER BY ALL", [benchmark, lang]))
    return run_paid(home, ARENA_JUDGING, cell, read, {},
                    lambda client, ledger, fp: judge_battles(wh, client, benchmark, lang, models, judge, config, fp,
                                                             budget=ledger),
                    retry=unfinished(wh, "battles", "benchmark = ? AND lang = ? AND judge = ?", [benchmark, lang, judge]),
                    force=force, budget=budget, run_id=run_id)


def publish_estimate(estimate: JudgingEstimate, budget: Budget) -> None:
    """Show the judging's cost before anything is paid: the log, a Prefect markdown artifact, the MLflow run."""
    import mlflow

    line = estimate.describe(budget)
    log.info("cost estimate: %s", line)
    create_markdown_artifact(markdown=f"## Arena cost estimate\n\n{line}", key="babelbench-arena-estimate",
                             description="What judging may cost at most, before any call")
    mlflow.set_tags({"babelbench.estimate.judge_tokens": str(estimate.tokens),
                     "babelbench.estimate.judge_usd": f"{estimate.usd:.6f}",
                     "babelbench.estimate.verdicts": str(estimate.queries * estimate.pairs)})


def report_arena(wh: Warehouse, run: TrackedRun, benchmark: str, judge: str, models: list[str], langs: list[str],
                 sample: TraceSample) -> int:
    """The arena's run as an MLflow evaluation run: the benchmark's evaluation dataset as its input, the judge's
    template linked, a sample of its battles as traces (:mod:`tasks.mlflow_genai.battles`); the features it computed
    shown on the models' response traces (:mod:`tasks.mlflow_genai.features`). The battle traces written."""
    import time

    import mlflow

    dataset = evaluation_dataset(wh, benchmark, run.experiment_id)
    if dataset is not None:
        mlflow.log_input(dataset, context="evaluation")
    mlflow.set_tags({**RUN_TYPE, "babelbench.traces": sample.describe()})
    uri = tracking_uri(wh.home)
    prompt = link_templates(uri, run.mlflow_run_id, [TEMPLATE])[TEMPLATE]
    since = wh.scalar("SELECT started_at FROM runs WHERE run_id = ?", [run.run_id])
    written = write_traces(uri, run.experiment_id, run.mlflow_run_id, battles_traces(
        wh, benchmark, judge, models, langs, sample, time.time_ns(), since, prompt))
    mlflow.set_tag("babelbench.traces.written", str(len(written)))
    show_features(wh, uri, benchmark, models)
    return len(written)


@stage_task("arena-ratings")
def arena_ratings_stage(home: str, cell: str, benchmark: str, judge: str, models: list[str], langs: list[str],
                        ties: Ties, bootstrap: int, seed: int, judged: list[StageRef], force: frozenset[str],
                        run_id: str) -> StageRef | State[StageRef]:
    """Bradley–Terry ratings of this run's battles (``judged``: the judging cells it waits for), also per window
    relative to the systems' knowledge cutoffs on a benchmark built from dated articles."""
    wh = shared_warehouse(home)
    windows = system_windows(wh, benchmark, models)
    read = ReadFields(values={"ties": ties, "bootstrap": bootstrap, "seed": seed,
                              "windows": digest(None if windows is None else sorted(
                                  (system, sorted(by_instance.items())) for system, by_instance in windows.items())),
                              **_run_battles_read(wh, benchmark, judge, models, langs)})
    return as_task_result(run_stage(wh, ARENA_RATINGS, cell, read, {},
                                    lambda fp: rate(wh, benchmark, judge, models, langs, ties, bootstrap, seed, fp,
                                                    windows),
                                    force=forced(ARENA_RATINGS.name, force), run_id=run_id))


def _run_battles_read(wh: Warehouse, benchmark: str, judge: str, models: list[str], langs: list[str]) -> dict:
    """What a stage reading this run's battles depends on: the systems, the languages and their battles."""
    systems = sorted(set(models))
    return {"models": systems, "langs": sorted(langs),
            "battles": rows_digest(wh, RUN_BATTLES, [benchmark, judge, list(STATUSES), systems, systems,
                                                     sorted(langs)])}


@stage_task("arena-surrogate")
def arena_surrogate_stage(home: str, cell: str, benchmark: str, judge: str, models: list[str], langs: list[str],
                          ties: Ties, bootstrap: int, seed: int, upstream: list[StageRef], force: frozenset[str],
                          run_id: str) -> StageRef | State[StageRef]:
    """The surrogate judge (``upstream``: the ratings and feature cells it waits for)."""
    wh = shared_warehouse(home)
    read = ReadFields(values={
        "ties": ties, "bootstrap": bootstrap, "seed": seed, **_run_battles_read(wh, benchmark, judge, models, langs),
        "features": rows_digest(wh, "SELECT instance_id, model, feature, value, status FROM features"
                                    " WHERE benchmark = ? ORDER BY ALL", [benchmark])})
    return as_task_result(run_stage(wh, ARENA_SURROGATE, cell, read, {},
                                    lambda fp: fit_surrogate(wh, benchmark, judge, models, langs, ties, bootstrap,
                                                             seed, fp),
                                    force=forced(ARENA_SURROGATE.name, force), run_id=run_id))
