"""Arena flow: pairwise judging of systems' answers per language, then Bradley–Terry ratings with intervals."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.arena import ArenaConfig, Ties, agreement_text, best_first, judging_estimate, rating_text
from tasks.catalog import ARENA_JUDGING, ARENA_RATINGS, ARENA_SURROGATE, FEATURES, descendants, scope
from tasks.features import FeatureModels, feature_names
from tasks.inference import check_gold_readers
from tasks.llm import Budget
from tasks.mlflow_genai import TraceSample
from tasks.settings import resolve_home
from tasks.stages import (
    arena_judging_stage,
    arena_langs,
    arena_ratings_stage,
    arena_surrogate_stage,
    client_for,
    collect_outcomes,
    features_stage,
    finish_run,
    flow_session,
    overall_ratings,
    publish_estimate,
    report_arena,
)
from tasks.tracking import tracked_run


class ArenaParams(BaseModel):
    """Parameters of an arena run (a form in the Prefect UI)."""

    benchmark: str = Field(description="A benchmark whose responses `babelbench eval` stored for every system.")
    models: list[str] = Field(min_length=2, description="The systems to compare (registry names).")
    judge: str = Field(description="Registry name of the pairwise judge.")
    langs: list[str] | None = Field(None, description="Languages to judge; all the benchmark's if empty.")
    arena: ArenaConfig = Field(default_factory=ArenaConfig)
    reference_model: str | None = Field(None, description="Reference system for the overlap features when the"
                                        " benchmark has no gold answers (its own responses are excluded).")
    feature_models: FeatureModels = Field(default_factory=FeatureModels,
                                          description="Models of the model-based features (computed when named).")
    features: list[str] | None = Field(None, description="Features for the surrogate; the deterministic ones if"
                                       " empty (model-based and LLM-graded ones by name; the judge grades).")
    ties: Ties = Field("drop", description="drop: ignore ties; half: half a win to each side. A pair whose two"
                       " orders picked opposite winners is a tie.")
    bootstrap: int = Field(200, ge=1, description="Tournaments for the intervals.")
    budget: Budget = Field(default_factory=Budget, description="Limits on the judge's paid calls, tokens and USD.")
    traces: TraceSample = Field(default_factory=TraceSample, description="Which battles MLflow shows as traces.")
    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute with their descendants.")


@flow(name="arena", log_prints=True)
def arena_flow(params: ArenaParams) -> list[dict]:
    """Features of every response, battles per language (both orders), ratings per language and overall, and the
    surrogate judge — which also predicts ratings for systems with responses that were not in ``models``."""
    home = str(resolve_home(params.home))
    force = frozenset(descendants(scope("arena"), params.force))
    with flow_session(home) as wh, tracked_run(wh, "arena", params, flow_run.get_id()) as run:
        judged_langs = arena_langs(wh, params.benchmark, params.models, params.langs)
        client = client_for(home, wh)
        check_gold_readers(wh, client.registry, [params.judge], params.benchmark)
        publish_estimate(judging_estimate(wh, client, params.benchmark, judged_langs, params.models,
                                          params.judge, params.arena), params.budget)
        futures: dict[str, dict] = {}
        judged = []
        for lang in judged_langs:
            cell = f"{params.benchmark}/{lang}/{params.judge}"
            judged.append(arena_judging_stage.submit(home, cell, params.benchmark, lang, params.models, params.judge,
                                                     params.arena, params.budget, force, run.run_id))
            futures[cell] = {ARENA_JUDGING.name: judged[-1]}
        featured = []
        for name in feature_names(params.features):
            cell = f"{params.benchmark}/{name}"
            featured.append(features_stage.submit(home, cell, params.benchmark, name, params.reference_model,
                                                  params.feature_models, params.judge, params.budget, force,
                                                  run.run_id))
            futures[cell] = {FEATURES.name: featured[-1]}
        cell = f"{params.benchmark}/{params.judge}"
        rated = arena_ratings_stage.submit(home, cell, params.benchmark, params.judge, params.models, judged_langs,
                                           params.ties, params.bootstrap, params.arena.seed, judged, force, run.run_id)
        futures[cell] = {ARENA_RATINGS.name: rated, ARENA_SURROGATE.name: arena_surrogate_stage.submit(
            home, cell, params.benchmark, params.judge, params.models, judged_langs, params.ties, params.bootstrap,
            params.arena.seed, [rated, *featured], force, run.run_id)}
        outcomes = collect_outcomes(futures)
        results = run.results()
        report_arena(results, run, params.benchmark, params.judge, params.models, judged_langs, params.traces)
        rows = overall_ratings(results, params.benchmark, params.judge)
        for row in sorted(rows, key=best_first):
            print(f"{row['model']:<20} {rating_text(row)}"
                  + (f"  no answer on {row['failed_queries']} queries" if row["failed_queries"] else "")
                  + ("  (predicted from features)" if row["predicted"] else ""))
        judged = next((row for row in rows if not row["predicted"]), None)
        if judged is not None:  # every judged row of the slice carries the judge's statistics
            print(agreement_text(judged))
        return finish_run(run, "arena", outcomes)
