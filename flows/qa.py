"""QA benchmark flows: build items by a recipe (ECLEKTIC, XRAG, or an installed package's), translate them, assemble
instances."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field, ValidationError, model_validator

from tasks.catalog import descendants, scope
from tasks.distractors import DistractorConfig
from tasks.errors import ConfigError
from tasks.instances import InstanceConfig, export_instances
from tasks.llm import Budget
from tasks.qa import QcConfig, benchmark_definition, live_release, newest_month
from tasks.recipe import RECIPES, BuildRun, InstancesRun, recipe, recipes
from tasks.settings import resolve_home
from tasks.stage import current_ref
from tasks.stages import (
    collect_outcomes,
    corpus_refs,
    finish_run,
    flow_session,
    instances_stage,
    prescreen_stage,
    register_benchmark,
    translate_stage,
)
from tasks.text import WikiLang
from tasks.tracking import tracked_run
from tasks.translate import TranslateConfig
from tasks.warehouse import Warehouse


class QaRunParams(BaseModel):
    """What the parameters of every QA flow carry: the home and the stages to recompute."""

    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute with their descendants.")

    def home_dir(self) -> str:
        return str(resolve_home(self.home))

    def forced_stages(self) -> frozenset[str]:
        return frozenset(descendants(scope("qa-build", "translate", "instances"), self.force))


#: the recipes that build benchmarks from the corpus (the built-ins' and installed packages'), an enum in the form
BuildRecipe = Literal[tuple(r.name for r in recipes() if r.items_stage)]  # type: ignore[valid-type]


class QaBuildParams(QaRunParams):
    """Parameters of a QA benchmark build (a form in the Prefect UI)."""

    recipe: BuildRecipe = Field(description="The recipe that builds the benchmark.")
    benchmark: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]+$",
                                  description="Benchmark name; the recipe's name if empty (live: <recipe>-live-YYYY-MM).")
    live: bool = Field(False, description="This month's live release: only the articles new in the latest ingested "
                                          "dump (since the dump before it), a window resolved when the run starts.")
    langs: list[WikiLang] = Field(min_length=2, description="Languages of the benchmark.")
    generator: str = Field("local", description="Registry name of the model that writes the items.")
    judge: str | None = Field(None, description="Registry name of the QC pre-screen model; the generator if empty.")
    prescreen: bool = Field(True, description="Ask the judge model to pre-screen every item; the rule checks run "
                                              "either way. Off: an item passing the rules counts as unreviewed.")
    budget: Budget = Field(default_factory=Budget, description="Limits on this run's paid calls, tokens and USD.")
    config: dict[str, Any] = Field(default_factory=dict, description="The recipe's own build settings (ECLEKTIC:"
                                   " per_lang, min_chars, window …; XRAG: pivot, max_pairs, question_types, window …;"
                                   " see each recipe's guide); its defaults where left out.")
    qc: QcConfig = Field(default_factory=QcConfig)

    @model_validator(mode="before")
    @classmethod
    def _settings_under_the_recipe_s_name(cls, data: Any) -> Any:
        """Runs recorded before recipes were plugins kept a recipe's settings under its name (``xrag: {…}``): they
        are its ``config`` now, and the other recipes' defaults, recorded beside them, are dropped."""
        if isinstance(data, dict) and "config" not in data and isinstance(data.get("recipe"), str):
            data = dict(data)
            data["config"] = data.pop(data["recipe"], None) or {}
            for name in RECIPES.names():
                data.pop(name, None)
        return data

    @model_validator(mode="after")
    def _name(self) -> QaBuildParams:
        config = self.recipe_config()
        if self.live and getattr(config, "window", None):
            raise ValueError("live takes its window from the ingested dumps: leave config.window empty, or turn live"
                             " off")
        if self.benchmark is None and not self.live:  # a live build is named by its month once the window is known
            object.__setattr__(self, "benchmark", self.recipe)
        return self

    def recipe_config(self) -> BaseModel | None:
        """The recipe's settings model of ``config``; a ValueError naming the setting that is wrong."""
        model = recipe(self.recipe).build_config
        if model is None:
            if self.config:
                raise ValueError(f"recipe {self.recipe!r} takes no settings; got {sorted(self.config)}")
            return None
        if isinstance(self.config, model):
            return self.config
        try:
            return model.model_validate(self.config)
        except ValidationError as exc:
            raise ValueError(f"config of recipe {self.recipe!r}: {exc}") from None

    @property
    def name(self) -> str:
        return self.benchmark or self.recipe


def _this_month(wh: Warehouse, params: QaBuildParams) -> QaBuildParams:
    """A live build as the literal window and name it resolves to now, so the run, the benchmark's definition and
    every item record those, and a rerun of its stages rebuilds the same month."""
    if not params.live:
        return params
    if "window" not in (recipe(params.recipe).build_config or BaseModel).model_fields:
        raise ConfigError(f"recipe {params.recipe!r} has no window: a live build takes one")
    name, window = live_release(wh, params.recipe, params.langs, params.benchmark)
    print(f"live build {name}: the articles new in the window {window}")
    config = params.config | {"window": window.model_dump(mode="json")}
    return params.model_copy(update={"live": False, "benchmark": name, "config": config})


@flow(name="qa-build", log_prints=True)
def qa_build_flow(params: QaBuildParams) -> list[dict]:
    """Generate a benchmark's QA items by its recipe's build, with their parse status, then pre-screen them."""
    home, force = params.home_dir(), params.forced_stages()
    with flow_session(home) as wh:
        params = _this_month(wh, params)
        protocol, config = recipe(params.recipe), params.recipe_config()
        with tracked_run(wh, "qa-build", params, flow_run.get_id(), logs=False) as run:
            protocol.prepare(wh, params.name, params.langs, config)
            register_benchmark(wh, params.name, params.recipe, params.langs, params.generator,
                               params.model_dump(mode="json", exclude={"home", "force"}))
            futures, items = protocol.build(BuildRun(home, params.name, params.langs, params.generator, config,
                                                     corpus_refs(wh, params.langs), params.budget, force, run.run_id))
            judge = (params.judge or params.generator) if params.prescreen else None  # the rule checks always run
            futures.setdefault(params.name, {})["qa-prescreen"] = prescreen_stage.submit(
                home, params.name, params.name, judge, params.qc, items, params.budget, force, run.run_id)
            return finish_run(run, "qa-build", collect_outcomes(futures))


class TranslateParams(QaRunParams):
    """Parameters of a translation run (a form in the Prefect UI)."""

    benchmark: str
    to: list[str] = Field(min_length=1, description="Target languages.")
    translator: str = Field("local", description="Registry name of the translating model.")
    config: TranslateConfig = Field(default_factory=TranslateConfig)
    qc_policy: Literal["prescreen", "human"] = Field("prescreen", description="Which items count as accepted (see instances).")
    budget: Budget = Field(default_factory=Budget, description="Limits on this run's paid calls, tokens and USD.")


@flow(name="translate", log_prints=True)
def translate_flow(params: TranslateParams) -> list[dict]:
    """Translate the accepted items into each target language (one cell each) through the quality gate."""
    home, force = params.home_dir(), params.forced_stages()
    with flow_session(home) as wh, tracked_run(wh, "translate", params, flow_run.get_id(), logs=False) as run:
        benchmark_definition(wh, params.benchmark)
        items = current_ref(wh, "qa-prescreen", params.benchmark)
        futures = {f"{params.benchmark}>{lang}": {"translate": translate_stage.submit(
            home, f"{params.benchmark}>{lang}", params.benchmark, lang, params.translator, params.config,
            params.qc_policy, items, params.budget, force, run.run_id)} for lang in params.to}
        return finish_run(run, "translate", collect_outcomes(futures))


class InstancesParams(QaRunParams):
    """Parameters of instance assembly (a form in the Prefect UI)."""

    benchmark: str
    live: bool = Field(False, description="`benchmark` names a live family (xrag-live): assemble its newest month, "
                                          "as the monthly chain does after qa-build.")
    instances: InstanceConfig = Field(default_factory=InstanceConfig)
    distractors: DistractorConfig = Field(default_factory=DistractorConfig)
    backend: str = Field("tantivy", description="Index backend of the BM25 distractor candidates.")
    out: str | None = Field(None, description="Export directory; $BABELBENCH_HOME/exports when empty.")
    budget: Budget = Field(default_factory=Budget, description="Limits on the answer check's paid calls, tokens and USD.")


@flow(name="instances", log_prints=True)
def instances_flow(params: InstancesParams) -> list[dict]:
    """What the recipe reads first (XRAG: indexes and distractors), then every setting's instances, exported as JSON
    Lines."""
    home, force = params.home_dir(), params.forced_stages()
    with flow_session(home) as wh:
        if params.live:  # the run records the month it assembled, not the family
            params = params.model_copy(update={"live": False, "benchmark": newest_month(wh, params.benchmark)})
        with tracked_run(wh, "instances", params, flow_run.get_id(), logs=False) as run:
            recipe_name, langs = benchmark_definition(wh, params.benchmark)
            translations = {f"translate_{lang}": ref for lang in langs
                            if (ref := current_ref(wh, "translate", f"{params.benchmark}>{lang}")) is not None}
            futures, inputs = recipe(recipe_name).before_instances(InstancesRun(
                home, params.benchmark, langs, params, translations, force, run.run_id))
            inputs = translations | inputs
            instances = instances_stage.submit(home, params.benchmark, params.benchmark, params.instances, inputs, force,
                                               run.run_id)
            futures.setdefault(params.benchmark, {})["instances"] = instances
            outcomes = collect_outcomes(futures)
            if instances.state.is_completed():
                out = Path(params.out) if params.out else Path(home) / "exports"
                written = export_instances(wh, params.benchmark, out)
                print(f"exported {sum(written.values())} instances to {out / params.benchmark}: {written}")
            return finish_run(run, "instances", outcomes)
