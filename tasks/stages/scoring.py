"""Scoring as a Prefect task, and how an evaluation is shown: nested MLflow runs, a Prefect table, the terminal.

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
from tasks.inference.prompting import TEMPLATES
from tasks.judging.pointwise import KINDS
from tasks.llm import template_hash
from tasks.metrics.agreement import judge_agreement
from tasks.metrics.leaderboard import HEADLINE, ScoringConfig, failed_responses, score_model
from tasks.metrics.score import ALL
from tasks.stage import ReadFields, StageRef, digest, run_stage
from tasks.stages.inventory import leaderboard_rows
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.reporting import artifact_key
from tasks.tracking import TrackedRun, mlflow_name
from tasks.version import code_version
from tasks.warehouse.db import Warehouse

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
    """The leaderboard rows of one model on one benchmark."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *ScoringConfig.model_fields, recipe=recipe, judges=sorted(judges), rows=digest([
        wh.query("SELECT instance_id, status, reason, answer, language_status, detected_lang FROM responses"
                 " WHERE benchmark = ? AND model = ? ORDER BY ALL", [benchmark, model]),
        wh.query("SELECT instance_id, judge, verdict, status FROM judgements WHERE benchmark = ? AND model = ?"
                 " AND list_contains(?, judge) ORDER BY ALL", [benchmark, model, judges]),
    ]))
    inputs = {f"cell_{i}": ref for i, ref in enumerate(upstream)}
    return as_task_result(run_stage(
        wh, SCORING, cell, read, inputs, lambda fp: score_model(wh, benchmark, recipe, model, judges, config, fp),
        force=forced(SCORING.name, force), run_id=run_id))


def report_evaluation(wh: Warehouse, benchmark: str, models: list[str], run: TrackedRun) -> None:
    """One MLflow run per model nested under the evaluation's run, the judges' agreement in the evaluation's run, a
    Prefect table, and the headline rows printed."""
    rows = leaderboard_rows(wh, benchmark, models)
    for model in models:
        _log_model_run(wh, benchmark, model, [r for r in rows if r["model"] == model])
    _log_agreement(wh, benchmark)
    headline = [r for r in rows if r["lang"] == "all" and r["subset"] == "all" and r["metric"] in HEADLINE.values()]
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


def _log_model_run(wh: Warehouse, benchmark: str, model: str, rows: list[dict[str, Any]]) -> None:
    import mlflow
    import pandas as pd

    judges = sorted({judge for r in rows for judge in r["judges"]})
    with mlflow.start_run(run_name=f"{benchmark}-{model}", nested=True):
        mlflow.set_tags({"babelbench.benchmark": benchmark, "babelbench.model": model})
        mlflow.log_params({"model": model, "judges": ",".join(judges) or "-", "code_version": code_version(),
                           "failed_responses": failed_responses(wh, benchmark, model) or "none",
                           **{f"template.{name}": template_hash(name)[:12] for name in TEMPLATES},
                           **{f"template.{kind.template}": template_hash(kind.template)[:12] for kind in KINDS.values()}})
        metrics = {}
        for r in rows:
            slice_ = f"{r['setting']}.{r['lang']}.{r['subset']}"
            metrics |= {mlflow_name(f"{name}.{slice_}"): float(r[name]) for name in COUNT_COLUMNS if r[name] is not None}
            if r["value"] is None:
                continue
            base = mlflow_name(f"{r['metric']}.{slice_}")
            metrics[base] = r["value"]
            if r["ci_low"] is not None:
                metrics[f"{base}.ci_low"], metrics[f"{base}.ci_high"] = r["ci_low"], r["ci_high"]
        mlflow.log_metrics(metrics)
        figure = _per_language_figure(rows)
        if figure is not None:
            import matplotlib.pyplot as plt

            mlflow.log_figure(figure, "per_language.png")
            plt.close(figure)  # pyplot keeps every figure until closed: a long-lived worker would pile them up
        items = wh.query_dicts(
            "SELECT r.instance_id, r.setting, r.lang, r.status, r.answer, r.citations,"
            " list(j.judge || '=' || coalesce(j.verdict, j.status) ORDER BY j.judge) FILTER (j.judge IS NOT NULL) AS verdicts"
            " FROM responses r LEFT JOIN judgements j USING (benchmark, instance_id, model)"
            " WHERE r.benchmark = ? AND r.model = ? GROUP BY ALL ORDER BY r.instance_id", [benchmark, model])
        mlflow.log_table(pd.DataFrame(items), "per_item.json")


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


def _per_language_figure(rows: list[dict[str, Any]]):  # noqa: ANN202 (a matplotlib Figure, or None)
    """The headline metric per question language and setting, with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["lang"] != "all" and r["subset"] == "all" and r["metric"] in HEADLINE.values()
             and r["value"] is not None]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(shown) + 2), 3.5))
    labels = [f"{r['setting']}\n{r['lang']}" for r in shown]
    values = [r["value"] for r in shown]
    errors = [[r["value"] - (r["ci_low"] if r["ci_low"] is not None else r["value"]) for r in shown],
              [(r["ci_high"] if r["ci_high"] is not None else r["value"]) - r["value"] for r in shown]]
    ax.bar(range(len(shown)), values, yerr=errors, capsize=3)
    ax.set_xticks(range(len(shown)), labels, fontsize=7)
    ax.set_ylabel(shown[0]["metric"])
    ax.set_title("per question language, 95% intervals")
    fig.tight_layout()
    return fig
