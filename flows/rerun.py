"""Rerun one stage from the Prefect UI: the stage and its descendants, in one scope, with everything else cached.

The form names the stage (an enum of every stage) and its scope — the
benchmark, or the collection for CLIR stages; languages and models narrow
it.  The flow that owns the stage is run again with the parameters of its
latest run on that scope, ``force`` set to the stage: the stage's cells and
those downstream of them recompute, every other cell is a cache hit.  A
scope that was never run is an error that names the command to run first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from prefect import flow
from pydantic import BaseModel, Field

from flows.arena import ARENA_STAGES, ArenaParams, arena_flow
from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EVAL_STAGES, EvaluateParams, evaluate_flow
from flows.features import FeaturesParams, features_flow
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from tasks.errors import ConfigError
from tasks.orchestration import shared_warehouse
from tasks.settings import resolve_home


@dataclass(frozen=True)
class Owner:
    """The flow that owns some stages: its name in ``runs``, parameters, function and how a run names its scope."""

    flow: str
    params: type[BaseModel]
    run: Callable[[Any], list[dict]]
    stages: tuple[str, ...]
    scope: Callable[[dict[str, Any]], str | None]


def _benchmark(params: dict[str, Any]) -> str | None:
    return params.get("benchmark")


OWNERS = (
    Owner("corpus", CorpusParams, corpus_flow, ("download", "documents", "sitelinks"), lambda p: "corpus"),
    Owner("clir-build", ClirBuildParams, clir_build_flow, ("index", "retrieval", "qrels"), lambda p: p.get("name")),
    Owner("qa-build", QaBuildParams, qa_build_flow,
          ("qa-candidates", "qa-generate", "xrag-pairs", "xrag-related", "xrag-questions", "qa-prescreen"),
          lambda p: p.get("benchmark") or p.get("recipe")),
    Owner("translate", TranslateParams, translate_flow, ("translate",), _benchmark),
    Owner("instances", InstancesParams, instances_flow, ("distractors", "instances"), _benchmark),
    Owner("evaluate", EvaluateParams, evaluate_flow, tuple(s.name for s in EVAL_STAGES), _benchmark),
    Owner("features", FeaturesParams, features_flow, ("features",), _benchmark),
    Owner("arena", ArenaParams, arena_flow, tuple(s.name for s in ARENA_STAGES if s.name != "features"), _benchmark),
)
STAGE_OWNER = {stage: owner for owner in OWNERS for stage in owner.stages}
StageName = Literal["download", "documents", "sitelinks", "index", "retrieval", "qrels", "qa-candidates",
                    "qa-generate", "xrag-pairs", "xrag-related", "xrag-questions", "qa-prescreen", "translate",
                    "distractors", "instances", "inference", "judging", "scoring", "features", "arena-judging",
                    "arena-ratings", "arena-surrogate"]


class RerunParams(BaseModel):
    """Which stage to recompute, where (a form in the Prefect UI)."""

    stage: StageName = Field(description="The stage to recompute; the stages downstream of it recompute too.")
    scope: str = Field("corpus", description="The benchmark, or the collection for index/retrieval/qrels"
                                             " (ignored for the corpus stages).")
    langs: list[str] | None = Field(None, description="Only these languages (default: those of the last run).")
    models: list[str] | None = Field(None, description="Only these models (evaluate, arena; default: the last run's).")
    home: str | None = None


def last_params(home: str, owner: Owner, scope: str) -> dict[str, Any]:
    """The parameters of the owner flow's latest run on ``scope``."""
    rows = shared_warehouse(home).query("SELECT params FROM runs WHERE flow = ? AND params IS NOT NULL"
                                        " ORDER BY started_at DESC", [owner.flow])
    for (raw,) in rows:
        params = json.loads(raw)
        if owner.scope(params) == (scope if owner.flow != "corpus" else "corpus"):
            return params
    raise ConfigError(f"no earlier {owner.flow} run on {scope!r} to rerun; run `babelbench {owner.flow.split('-')[0]}"
                      f" …` for it first")


@flow(name="rerun-stage", log_prints=True)
def rerun_stage_flow(params: RerunParams) -> list[dict]:
    """The owning flow again, on the scope's last parameters, with the stage forced."""
    home = str(resolve_home(params.home))
    owner = STAGE_OWNER[params.stage]
    previous = last_params(home, owner, params.scope)
    changes: dict[str, Any] = {"force": [params.stage], "home": home}
    if params.langs is not None:
        changes["langs"] = params.langs
    if params.models is not None and "models" in owner.params.model_fields:
        changes["models"] = params.models
    print(f"rerunning {params.stage} of {owner.flow} on {params.scope}")
    return owner.run(owner.params.model_validate(previous | changes))
