"""The arena's stages: pairwise judging per (benchmark, language, judge), then ratings and the surrogate per
(benchmark, judge), each over this run's battles (:mod:`tasks.arena.standings`)."""

from __future__ import annotations

import logging

from prefect.artifacts import create_markdown_artifact
from prefect.states import State

from tasks.arena.battles import TEMPLATE, ArenaConfig, JudgingEstimate, judge_battles
from tasks.arena.bradley_terry import Ties
from tasks.arena.standings import RUN_BATTLES, STATUSES, fit_surrogate, rate
from tasks.catalog import ARENA_JUDGING, ARENA_RATINGS, ARENA_SURROGATE
from tasks.llm import Budget, template_hash
from tasks.stage import ReadFields, StageRef, rows_digest, run_stage
from tasks.stages.inference import model_identity
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished
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
    mlflow.log_metrics({"estimate.judge_tokens": float(estimate.tokens), "estimate.judge_usd": estimate.usd,
                        "estimate.verdicts": float(estimate.queries * estimate.pairs)})


@stage_task("arena-ratings")
def arena_ratings_stage(home: str, cell: str, benchmark: str, judge: str, models: list[str], langs: list[str],
                        ties: Ties, bootstrap: int, seed: int, judged: list[StageRef], force: frozenset[str],
                        run_id: str) -> StageRef | State[StageRef]:
    """Bradley–Terry ratings of this run's battles (``judged``: the judging cells it waits for)."""
    wh = shared_warehouse(home)
    read = ReadFields(values={"ties": ties, "bootstrap": bootstrap, "seed": seed, **_run_battles_read(
        wh, benchmark, judge, models, langs)})
    return as_task_result(run_stage(wh, ARENA_RATINGS, cell, read, {},
                                    lambda fp: rate(wh, benchmark, judge, models, langs, ties, bootstrap, seed, fp),
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
