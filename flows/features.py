"""Features flow: the heuristic features of a benchmark's responses, one stage cell per feature."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.catalog import FEATURES, descendants, scope
from tasks.errors import ConfigError
from tasks.features import FeatureModels, feature_names, graded_features
from tasks.llm import Budget
from tasks.settings import resolve_home
from tasks.stages import (
    collect_outcomes,
    features_stage,
    finish_run,
    flow_session,
    report_features,
    response_languages,
)
from tasks.tracking import tracked_run


class FeaturesParams(BaseModel):
    """Parameters of a features run (a form in the Prefect UI)."""

    benchmark: str = Field(description="A benchmark whose responses `babelbench eval` stored.")
    features: list[str] | None = Field(None, description="Features to compute; all of them if empty.")
    reference_model: str | None = Field(None, description="The system whose answers are the reference for overlap"
                                        " features when the benchmark has no gold answers (its own are excluded).")
    models: FeatureModels = Field(default_factory=FeatureModels, description="Models of the model-based features.")
    grader: str | None = Field(None, description="Registry name of the LLM grading answer_overlap_score and"
                               " fluency_score.")
    budget: Budget = Field(default_factory=Budget, description="Limits on the grader's paid calls, tokens and USD.")
    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute (features).")


@flow(name="features", log_prints=True)
def features_flow(params: FeaturesParams) -> list[dict]:
    """Every chosen feature of every response of the benchmark."""
    home = str(resolve_home(params.home))
    names = feature_names(params.features)
    graded = graded_features(names)
    if graded and params.grader is None:
        raise ConfigError(f"{', '.join(graded)}: graded by an LLM; name the grader (--grader, a registry name)")
    force = frozenset(descendants(scope("features"), params.force))
    with flow_session(home) as wh, tracked_run(wh, "features", params, flow_run.get_id()) as run:
        if not response_languages(wh, params.benchmark):
            raise ConfigError(f"benchmark {params.benchmark!r} has no responses; run `babelbench eval --benchmark"
                              f" {params.benchmark} --models …` first")
        cells = {f"{params.benchmark}/{name}": name for name in names}
        futures = {cell: {FEATURES.name: features_stage.submit(home, cell, params.benchmark, name,
                                                               params.reference_model, params.models, params.grader,
                                                               params.budget, force, run.run_id)}
                   for cell, name in cells.items()}
        outcomes = collect_outcomes(futures)
        report_features(run.results(), params.benchmark)
        return finish_run(run, "features", outcomes)
