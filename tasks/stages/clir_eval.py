"""Prefect tasks of CLIR evaluation: rank and score, then report."""

from __future__ import annotations

import json

from prefect import task
from pydantic import BaseModel, Field

from tasks.metrics.clir_eval import EvalResult, evaluate
from tasks.metrics.clir_report import log_to_mlflow, publish_table
from tasks.placement import DeviceConfig, resolve
from tasks.rankers.base import log_model_placement, make_ranker
from tasks.stages.orchestration import shared_warehouse
from tasks.warehouse.db import upsert
from tasks.warehouse.lake import settled_writes


class ClirEvalParams(BaseModel):
    """Parameters of a CLIR evaluation (a form in the Prefect UI)."""

    name: str = Field(description="Collection to evaluate on.")
    ranker: str = Field("bm25", description="bm25, dense or dense:MODEL (hub name or local directory).")
    rerank: str | None = Field(None, description="Cross-encoder model to re-score the top K with.")
    split: str = Field("test1", description="train, dev, test1, test2, full, or all (every query).")
    k: int = Field(100, ge=1, le=1000)
    backend: str = Field("tantivy", description="Index backend the bm25 ranker searches.")
    device: DeviceConfig = Field(default_factory=DeviceConfig.from_env,
                                 description="Where and in what precision a dense ranker or reranker runs.")
    home: str | None = None


@task(name="evaluate", task_run_name="evaluate[{params.name}]")
def evaluate_stage(home: str, params: ClirEvalParams, eval_id: str) -> EvalResult:
    """Rank every judged query of the collection and write rankings and eval_metrics."""
    wh = shared_warehouse(home)
    placement = resolve(params.device)
    ranker = make_ranker(params.ranker, placement, backend=params.backend)
    if params.rerank:
        from tasks.rankers.rerank import Reranker

        ranker = Reranker(ranker, params.rerank, placement, depth=params.k)
    with settled_writes(wh, f"evaluate[{params.name}]"):
        result = evaluate(wh, params.name, ranker, params.split, eval_id, k=params.k)
    with wh.transaction() as cur:
        upsert(cur, "evaluations", [[eval_id, params.name, ranker.name, params.rerank, params.split,
                                     json.dumps(params.model_dump(mode="json")), None]], then="now()")
    return result


@task(name="report-evaluation")
def log_evaluation(home: str, params: ClirEvalParams, result: EvalResult, mlflow_run_id: str) -> None:
    """MLflow metrics, heatmap and per-query table; a Prefect table; the MLflow run id on the evaluation."""
    wh = shared_warehouse(home)
    langs = sorted({r["src_lang"] for r in result.metrics} - {"all"} | {r["tgt_lang"] for r in result.metrics} - {"all"})
    log_to_mlflow(result, langs)
    log_model_placement(params.ranker, params.rerank, resolve(params.device))
    publish_table(result, params.name, params.ranker)
    with wh.transaction() as cur:
        cur.execute("UPDATE evaluations SET mlflow_run_id = ? WHERE eval_id = ?", [mlflow_run_id, result.eval_id])
