"""Arena flow: pairwise judging of systems' answers per language, then Bradley–Terry ratings with intervals."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.arena.battles import ArenaConfig, judging_estimate
from tasks.arena.bradley_terry import Ties, rating_text
from tasks.arena.pairwise import agreement_text
from tasks.arena.report import best_first
from tasks.arena.stages import (
    ARENA_JUDGING, ARENA_RATINGS, ARENA_SURROGATE, arena_judging_stage, arena_ratings_stage, arena_surrogate_stage,
    publish_estimate,
)
from tasks.features.models import FeatureModels
from tasks.features.stages import FEATURES, feature_names, features_stage
from tasks.errors import ConfigError
from tasks.llm import Budget
from tasks.llm.backends.gold import check_gold_readers
from tasks.orchestration import collect_outcomes, flow_session
from tasks.paid_stage import client_for
from tasks.reporting import finish_run
from tasks.settings import resolve_home
from tasks.stage import descendants
from tasks.tracking import tracked_run

ARENA_STAGES = (FEATURES, ARENA_JUDGING, ARENA_RATINGS, ARENA_SURROGATE)


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
    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute with their descendants.")


@flow(name="arena", log_prints=True)
def arena_flow(params: ArenaParams) -> list[dict]:
    """Features of every response, battles per language (both orders), ratings per language and overall, and the
    surrogate judge — which also predicts ratings for systems with responses that were not in ``models``."""
    home = str(resolve_home(params.home))
    force = frozenset(descendants(ARENA_STAGES, params.force))
    with flow_session(home) as wh, tracked_run(wh, "arena", params, flow_run.get_id()) as run:
        langs = [lang for (lang,) in wh.query("SELECT DISTINCT lang FROM responses WHERE benchmark = ? ORDER BY 1",
                                              [params.benchmark])]
        if not langs:
            raise ConfigError(f"benchmark {params.benchmark!r} has no responses; run `babelbench eval --benchmark"
                              f" {params.benchmark} --models …` first")
        unknown = sorted(set(params.langs or ()) - set(langs))
        if unknown:
            raise ConfigError(f"benchmark {params.benchmark!r} has no responses in {', '.join(unknown)}")
        # a system that was asked and failed everywhere enters (it loses every battle); one never asked cannot
        asked = {model for (model,) in wh.query("SELECT DISTINCT model FROM responses WHERE benchmark = ?",
                                                [params.benchmark])}
        silent = sorted(set(params.models) - asked)
        if silent:
            raise ConfigError(f"no responses of {', '.join(silent)} on {params.benchmark!r}; run `babelbench eval"
                              f" --benchmark {params.benchmark} --models {','.join(silent)}` first")
        judged_langs = params.langs or langs
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
        rows = wh.query_dicts("SELECT * FROM arena_ratings WHERE benchmark = ? AND judge = ? AND lang = 'all'",
                              [params.benchmark, params.judge])
        for row in sorted(rows, key=best_first):
            print(f"{row['model']:<20} {rating_text(row)}"
                  + (f"  no answer on {row['failed_queries']} queries" if row["failed_queries"] else "")
                  + ("  (predicted from features)" if row["predicted"] else ""))
        judged = next((row for row in rows if not row["predicted"]), None)
        if judged is not None:  # every judged row of the slice carries the judge's statistics
            print(agreement_text(judged))
        return finish_run(run, "arena", outcomes, home)
