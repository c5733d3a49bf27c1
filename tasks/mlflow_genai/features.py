"""Features computed after an evaluation, shown on its response traces.

The arena and ``babelbench features`` compute a benchmark's heuristic
features once the evaluation has written its traces.  Each model's latest
evaluation run then has its traces rewritten from the warehouse with the
features as ``CODE`` feedback: one batched write of whole traces costs a
fraction of adding each feature to each trace on its own (about a tenth of
a second per trace, against a twentieth per feedback).  The same responses
are traced (the run's sample is kept), linked to the same run and prompts;
an assessment the warehouse does not hold — a label a person gave in the UI
— is carried over to the new trace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tasks.mlflow_genai.prompts import template_of
from tasks.mlflow_genai.responses import responses_traces
from tasks.mlflow_genai.traces import Gold, TraceRecord, Verdict, write_traces
from tasks.warehouse.db import Warehouse

EVALUATE_EXPERIMENT = "babelbench-evaluate"


def _all_traces(client: Any, experiment_id: str, run_id: str) -> list[Any]:
    """Every trace of ``run_id`` (search_traces pages them)."""
    found, token = [], None
    while True:
        page = client.search_traces(locations=[experiment_id], run_id=run_id, page_token=token, include_spans=False)
        found += page
        token = page.token
        if not token:
            return found


def carried_over(old: Any, record: TraceRecord) -> TraceRecord:
    """``record`` with the assessments of trace ``old`` that it does not hold itself."""
    held = {(v.name, v.source_id) for v in record.verdicts} | {(g.name, g.source_id) for g in record.golds}
    verdicts, golds = list(record.verdicts), list(record.golds)
    for a in old.info.assessments:
        if (a.name, a.source.source_id) in held:
            continue
        if a.feedback is not None:
            error = a.feedback.error
            verdicts.append(Verdict(a.name, a.feedback.value, a.source.source_type, a.source.source_id, a.rationale,
                                    (error.error_code, error.error_message) if error else None, dict(a.metadata or {})))
        elif a.expectation is not None:
            golds.append(Gold(a.name, a.expectation.value, a.source.source_id))
    return replace(record, verdicts=tuple(verdicts), golds=tuple(golds))


def show_features(wh: Warehouse, tracking_uri: str, benchmark: str, models: Sequence[str]) -> int:
    """Rewrite the traces of each model's latest evaluation run on ``benchmark`` that lack a feature the warehouse
    now holds; the number of traces rewritten."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(EVALUATE_EXPERIMENT)
    if experiment is None:
        return 0
    rewritten = 0
    for model in models:
        runs = client.search_runs(
            [experiment.experiment_id], max_results=1, order_by=["attributes.start_time DESC"],
            filter_string=f"tags.`babelbench.benchmark` = '{benchmark}' AND tags.`babelbench.model` = '{model}'")
        if not runs:
            continue
        run = runs[0]
        old = {t.info.tags["babelbench.instance_id"]: t for t in _all_traces(client, experiment.experiment_id,
                                                                              run.info.run_id)}
        computed: dict[str, set[str]] = {}
        for instance_id, feature in wh.query("SELECT instance_id, feature FROM features WHERE benchmark = ? AND model = ?"
                                             " AND list_contains(?, instance_id)", [benchmark, model, list(old)]):
            computed.setdefault(instance_id, set()).add(feature)
        stale = sorted(i for i, names in computed.items() if names - {a.name for a in old[i].info.assessments})
        if not stale:
            continue
        prompts = {template_of(p["name"]): (p["name"], p["version"]) for i in stale
                   for p in json.loads(old[i].info.tags.get("mlflow.linkedPrompts", "[]"))}
        since = wh.scalar("SELECT started_at FROM runs WHERE mlflow_run_id = ?", [run.data.tags.get("mlflow.parentRunId")])
        start_ns = min(old[i].info.request_time for i in stale) * 1_000_000
        records = [carried_over(old[r.tags["babelbench.instance_id"]], r)
                   for r in responses_traces(wh, benchmark, model, stale, start_ns, since, prompts)]
        write_traces(tracking_uri, experiment.experiment_id, run.info.run_id, records)
        client.delete_traces(experiment.experiment_id, trace_ids=[old[i].info.trace_id for i in stale])
        rewritten += len(records)
    return rewritten
