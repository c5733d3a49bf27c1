"""Scoring as a Prefect task, and how an evaluation is shown: nested MLflow evaluation runs, a Prefect table, the
terminal.

Scoring reads only stored responses and verdicts, so it is cheap and runs
once per (benchmark, model) after every judging cell of that model.  Its
fingerprint covers the rows it reads: a judge that was retried, or a new
judge, rescore exactly the models they concern.
"""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_table_artifact
from prefect.states import State

from tasks.catalog import SCORING
from tasks.llm import load_registry
from tasks.metrics.agreement import judge_agreement
from tasks.metrics.leaderboard import ScoringConfig, failed_responses, headline_of, score_model
from tasks.metrics.score import ALL
from tasks.metrics.windows import item_windows
from tasks.mlflow_genai import TraceSample, evaluation_dataset, log_model_evaluation
from tasks.stage import ReadFields, StageRef, digest, run_stage
from tasks.stages.inventory import leaderboard_rows
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.reporting import artifact_key
from tasks.tracking import SNAPSHOT_TAG, WAREHOUSE_TAG, TrackedRun, mlflow_name, tracking_uri
from tasks.warehouse.db import Warehouse, snapshot_label

#: The response counts every leaderboard row carries (``tasks.metrics.score.Tally``).
COUNT_COLUMNS = ("answered", "failed", "judge_failed")
# 3: failed responses and missing verdicts counted, the whole panel's majority, XRAG's pooled languages without
# English, ECLEKTIC in percent with transfer denominators, no interval from one cluster
#: Pairs of judges beyond which an evaluation's run holds their agreement as its table only, not a metric per pair.
MAX_KAPPA_METRICS = 10


@stage_task("scoring")
def scoring_stage(home: str, cell: str, benchmark: str, recipe: str, model: str, judges: list[str],
                  config: ScoringConfig, upstream: list[StageRef], force: frozenset[str],
                  run_id: str) -> StageRef | State[StageRef]:
    """The leaderboard rows of one model on one benchmark, with its headline split by window relative to the
    model's knowledge cutoff (a model outside the registry, such as an imported system's, has none)."""
    wh = shared_warehouse(home)
    registry = load_registry(home=wh.home)
    cutoff = registry.get(model).cutoff_day if model in registry.names else None
    windows = item_windows(wh, benchmark, cutoff)
    read = ReadFields.of(config, *ScoringConfig.model_fields, recipe=recipe, judges=sorted(judges),
                         cutoff=cutoff.isoformat() if cutoff else None, windows=digest(sorted(windows.items()) if windows else None),
                         rows=digest([
        wh.query("SELECT instance_id, status, reason, answer, language_status, detected_lang FROM responses"
                 " WHERE benchmark = ? AND model = ? ORDER BY ALL", [benchmark, model]),
        wh.query("SELECT instance_id, judge, verdict, status FROM judgements WHERE benchmark = ? AND model = ?"
                 " AND list_contains(?, judge) ORDER BY ALL", [benchmark, model, judges]),
    ]))
    inputs = {f"cell_{i}": ref for i, ref in enumerate(upstream)}
    return as_task_result(run_stage(
        wh, SCORING, cell, read, inputs, lambda fp: score_model(wh, benchmark, recipe, model, judges, config, fp, windows),
        force=forced(SCORING.name, force), run_id=run_id))


def report_evaluation(wh: Warehouse, benchmark: str, models: list[str], run: TrackedRun, sample: TraceSample) -> None:
    """One MLflow evaluation run per model nested under the evaluation's run (its metrics, tables, figure and the
    traces of a sample of its responses), the benchmark's evaluation dataset as the input of each, the judges'
    agreement in the evaluation's run, a Prefect table, and the headline rows printed."""
    import mlflow

    rows = leaderboard_rows(wh, benchmark, models)
    dataset = evaluation_dataset(wh, benchmark, run.experiment_id)
    if dataset is not None:
        mlflow.log_input(dataset, context="evaluation")
    since = wh.scalar("SELECT started_at FROM runs WHERE run_id = ?", [run.run_id])
    where = {WAREHOUSE_TAG: wh.path, SNAPSHOT_TAG: snapshot_label(wh.snapshot())}  # the snapshot its rows are read at
    for model in models:
        with mlflow.start_run(run_name=f"{benchmark}-{model}", nested=True, tags=where):
            log_model_evaluation(wh, benchmark, model, [r for r in rows if r["model"] == model], dataset, sample,
                                 since, tracking_uri(wh.home))
    _log_agreement(wh, benchmark)
    metric = headline_of(wh, benchmark)
    headline = [r for r in rows if r["lang"] == "all" and r["subset"] == "all" and r["metric"] == metric]
    if headline:
        create_table_artifact(table=headline, key=artifact_key("leaderboard", benchmark),
                              description=f"Leaderboard of {benchmark}: pooled over languages, 95% intervals")
    for row in headline:
        print(f"{benchmark} {row['setting']:<26} {row['model']:<16} {row['metric']:<16} {_shown(row)}")
    for model in models:
        failed = failed_responses(wh, benchmark, model)
        if failed:
            print(f"{benchmark} model {model}: {failed}")


def _shown(row: dict[str, Any]) -> str:
    if row["value"] is None:
        return "undefined"
    interval = f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]" if row["ci_low"] is not None else " [n/a]"
    return f"{row['value']:.3f}{interval} (n={row['n']}, {_counts(row)}, {row['mode']})"


def _counts(row: dict[str, Any]) -> str:
    """What a value stands on, as one phrase: "answered 38, failed 2, judge_failed 1"."""
    return ", ".join(f"{name} {'-' if row[name] is None else row[name]}" for name in COUNT_COLUMNS)


def _log_agreement(wh: Warehouse, benchmark: str) -> None:
    """The benchmark's judge agreement, as `babelbench judges agreement` prints it, as a table of the active run,
    and each pair's κ over all languages as a metric ``kappa.<kind>.<judge> vs <judge>`` while pairs are few."""
    import mlflow
    import pandas as pd

    rows = judge_agreement(wh, benchmark)
    if not rows:
        return
    mlflow.log_table(pd.DataFrame(rows), "judge_agreement.json")
    pairs = [r for r in rows if r["lang"] == ALL and r["measure"] == "cohen"]
    if len(pairs) <= MAX_KAPPA_METRICS:
        mlflow.log_metrics({mlflow_name(f"kappa.{r['kind']}.{' vs '.join(r['judges'])}"): r["kappa"]
                            for r in pairs if r["kappa"] is not None})
