"""One model's evaluation as an MLflow 3 evaluation run: a few metrics, its tables and figure, its traces.

The run follows what ``mlflow.genai.evaluate`` leaves behind, so the
experiment's Evaluation runs view lists it with its dataset: the run type
tag, the benchmark's evaluation dataset as its input, the headline metrics
logged against that dataset, and the traces of its responses linked to it.
Metrics are only the headline metric of each setting over all languages,
with its 95% interval (``<metric>/<setting>``, ``…/ci_low``, ``…/ci_high``):
every other number — per language, per subset, the counts each stands on —
is one row of the ``leaderboard.json`` table, drawn per language in
``per_language.png``.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from tasks.judging.pointwise import KINDS
from tasks.llm.prompts import available_templates
from tasks.metrics.leaderboard import failed_responses, headline_of
from tasks.mlflow_genai.prompts import link_templates
from tasks.mlflow_genai.responses import responses_traces, sampled_responses
from tasks.mlflow_genai.sample import TraceSample
from tasks.mlflow_genai.traces import write_traces
from tasks.tracking import mlflow_name
from tasks.version import code_version
from tasks.warehouse.db import Warehouse

RUN_TYPE = {"mlflow.runType": "genai_evaluate"}  # what mlflow.genai.evaluate tags its runs with


def headline_metrics(rows: list[dict[str, Any]], headline: str) -> dict[str, float]:
    """``<metric>/<setting>`` and its interval's bounds for each setting's ``headline`` metric (the recipe's) over
    all languages and subsets; an undefined value (an empty denominator) is left out, not logged as a number."""
    metrics: dict[str, float] = {}
    for r in rows:
        if r["lang"] != "all" or r["subset"] != "all" or r["metric"] != headline or r["value"] is None:
            continue
        base = mlflow_name(f"{r['metric']}/{r['setting']}")
        metrics[base] = r["value"]
        if r["ci_low"] is not None:
            metrics[f"{base}/ci_low"], metrics[f"{base}/ci_high"] = r["ci_low"], r["ci_high"]
    return metrics


def model_templates(wh: Warehouse, benchmark: str, model: str) -> list[str]:
    """The templates ``model``'s responses on ``benchmark`` were asked with, and its judges' templates; an imported
    response names its file (``import:FILE``), no template."""
    known = set(available_templates())
    asked = [t for (t,) in wh.query("SELECT DISTINCT template FROM responses WHERE benchmark = ? AND model = ?",
                                    [benchmark, model]) if t in known]
    kinds = [k for (k,) in wh.query("SELECT DISTINCT kind FROM judgements WHERE benchmark = ? AND model = ?",
                                    [benchmark, model])]
    return sorted(set(asked) | {KINDS[kind].template for kind in kinds if kind in KINDS})


def log_model_evaluation(wh: Warehouse, benchmark: str, model: str, rows: list[dict[str, Any]], dataset: Any,
                         sample: TraceSample, since: datetime | None, tracking_uri: str) -> int:
    """Fill the active (nested) run with ``model``'s evaluation; the number of traces written."""
    import mlflow
    import pandas as pd

    run = mlflow.active_run()
    judges = sorted({judge for r in rows for judge in r["judges"]})
    mlflow.set_tags({"babelbench.benchmark": benchmark, "babelbench.model": model, **RUN_TYPE,
                     "babelbench.traces": sample.describe()})
    mlflow.log_params({"model": model, "judges": ",".join(judges) or "-", "code_version": code_version(),
                       "failed_responses": failed_responses(wh, benchmark, model) or "none"})
    if dataset is not None:
        mlflow.log_input(dataset, context="evaluation")
    headline = headline_of(wh, benchmark)
    mlflow.log_metrics(headline_metrics(rows, headline), dataset=dataset)
    if rows:
        mlflow.log_table(pd.DataFrame(rows).drop(columns=["benchmark", "model"]), "leaderboard.json")
    figure = per_language_figure(rows, headline)
    if figure is not None:
        import matplotlib.pyplot as plt

        mlflow.log_figure(figure, "per_language.png")
        plt.close(figure)  # pyplot keeps every figure until closed: a long-lived worker would pile them up
    prompts = link_templates(tracking_uri, run.info.run_id, model_templates(wh, benchmark, model))
    ids = sampled_responses(wh, benchmark, model, sample)
    traces = responses_traces(wh, benchmark, model, ids, time.time_ns(), since, prompts)
    written = write_traces(tracking_uri, run.info.experiment_id, run.info.run_id, traces)
    mlflow.set_tag("babelbench.traces.written", str(len(written)))
    return len(written)


def per_language_figure(rows: list[dict[str, Any]], headline: str):  # noqa: ANN201 (a matplotlib Figure, or None)
    """The ``headline`` metric per question language and setting, with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["lang"] != "all" and r["subset"] == "all" and r["metric"] == headline
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
