"""The features stage: one cell per (benchmark, feature), so adding or changing a feature computes only it.

A cell reads every response of the benchmark (ids, statuses, answers,
citations, language columns) and the instances' judged passages and
reference answers; all of that, the feature's version, the reference system
and — for a model feature — its model are its fingerprint.  LLM-graded
features are paid cells (cache, budget, retries of what failed); how a
feature is computed is :mod:`tasks.features.compute`.
"""

from __future__ import annotations

from prefect.states import State

from tasks.catalog import FEATURES as FEATURES_STAGE
from tasks.features.compute import compute_feature
from tasks.features.models import FeatureModels
from tasks.features.registry import FEATURES
from tasks.llm import Budget, template_hash
from tasks.mlflow_genai import show_features
from tasks.placement import placement_params
from tasks.stage import ReadFields, StageRef, rows_digest, run_stage
from tasks.stages.inference import model_identity
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished
from tasks.tracking import tracking_uri
from tasks.warehouse.db import Warehouse


@stage_task("features")
def features_stage(home: str, cell: str, benchmark: str, name: str, reference_model: str | None,
                   models: FeatureModels, grader: str | None, budget: Budget, force: frozenset[str],
                   run_id: str) -> StageRef | State[StageRef]:
    """One feature cell (see the module notes); an LLM-graded feature is a paid cell that retries what failed."""
    wh = shared_warehouse(home)
    feature = FEATURES.get(name)
    model = {"support_entailment": models.nli, "support_neutral": models.nli, "reranker_score": models.reranker}
    used = (model_identity(home, grader) | {"template": template_hash(feature.template)} if feature.template
            else {"name": model[name], **placement_params(model[name], models.device)} if model.get(name) else None)
    read = ReadFields(values={
        "feature": name, "version": feature.version, "reference_model": reference_model, "model": used,
        "responses": rows_digest(wh, "SELECT instance_id, model, status, answer, raw_text, citations, language_status,"
                                     " target_prob, english_prob, switched_share, template, request_hash FROM responses"
                                     " WHERE benchmark = ? ORDER BY ALL", [benchmark]),
        "instances": rows_digest(wh, "SELECT instance_id, question, answer, documents FROM instances WHERE benchmark = ?"
                                     " ORDER BY ALL", [benchmark])})
    if feature.template:
        return run_paid(home, FEATURES_STAGE, cell, read, {},
                        lambda client, ledger, fp: compute_feature(wh, benchmark, name, reference_model, models, fp,
                                                                   client=client, grader=grader, budget=ledger),
                        retry=unfinished(wh, "features", "benchmark = ? AND feature = ?", [benchmark, name]),
                        force=force, budget=budget, run_id=run_id)
    return as_task_result(run_stage(wh, FEATURES_STAGE, cell, read, {},
                                    lambda fp: compute_feature(wh, benchmark, name, reference_model, models, fp),
                                    force=forced(FEATURES_STAGE.name, force), run_id=run_id))


def report_features(wh: Warehouse, benchmark: str) -> int:
    """Show the benchmark's features on the response traces of each model's latest evaluation run in MLflow
    (:mod:`tasks.mlflow_genai.features`); the traces rewritten."""
    models = [model for (model,) in wh.query("SELECT DISTINCT model FROM responses WHERE benchmark = ? ORDER BY model",
                                             [benchmark])]
    return show_features(wh, tracking_uri(wh.home), benchmark, models)
