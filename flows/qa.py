"""QA benchmark flows: build items (ECLEKTIC, XRAG), translate them, assemble instances."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import flow
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from pydantic import BaseModel, Field, model_validator

from tasks.catalog import descendants, scope
from tasks.distractors import DistractorConfig
from tasks.errors import ConfigError
from tasks.index import IndexConfig
from tasks.instances import InstanceConfig, export_instances
from tasks.llm import Budget
from tasks.qa import (
    EclekticConfig,
    QcConfig,
    XragConfig,
    benchmark_definition,
    live_release,
    newest_month,
    require_qid_coverage,
)
from tasks.settings import resolve_home
from tasks.stage import StageRef, current_ref
from tasks.stages import (
    candidates_stage,
    collect_outcomes,
    corpus_refs,
    distractors_stage,
    finish_run,
    flow_session,
    generate_stage,
    index_stage,
    instances_stage,
    prescreen_stage,
    register_benchmark,
    translate_stage,
    xrag_pairs_stage,
    xrag_questions_stage,
    xrag_related_stage,
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


class QaBuildParams(QaRunParams):
    """Parameters of a QA benchmark build (a form in the Prefect UI)."""

    recipe: Literal["eclektic", "xrag"]
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
    eclektic: EclekticConfig = Field(default_factory=EclekticConfig)
    xrag: XragConfig = Field(default_factory=XragConfig)
    qc: QcConfig = Field(default_factory=QcConfig)

    @model_validator(mode="after")
    def _name(self) -> QaBuildParams:
        if self.live and (self.eclektic.window or self.xrag.window):
            raise ValueError("live takes its window from the ingested dumps: leave eclektic.window and xrag.window "
                             "empty, or turn live off")
        if self.benchmark is None and not self.live:  # a live build is named by its month once the window is known
            object.__setattr__(self, "benchmark", self.recipe)
        if self.recipe == "xrag" and self.xrag.pivot not in self.langs:
            raise ValueError(f"XRAG: the pivot language {self.xrag.pivot!r} must be one of the languages {self.langs}")
        return self

    @property
    def name(self) -> str:
        return self.benchmark or self.recipe


Cells = tuple[dict[str, dict], dict[str, PrefectFuture]]


def _this_month(wh: Warehouse, params: QaBuildParams) -> QaBuildParams:
    """A live build as the literal window and name it resolves to now, so the run, the benchmark's definition and
    every item record those, and a rerun of its stages rebuilds the same month."""
    if not params.live:
        return params
    name, window = live_release(wh, params.recipe, params.langs, params.benchmark)
    print(f"live build {name}: the articles new in the window {window}")
    config = getattr(params, params.recipe).model_copy(update={"window": window})
    return params.model_copy(update={"live": False, "benchmark": name, params.recipe: config})


def _eclektic_cells(home: str, params: QaBuildParams, corpus: dict[str, StageRef], force: frozenset[str],
                    run_id: str) -> Cells:
    """One cell per language: its candidate articles, then one item per selected article."""
    futures: dict[str, dict] = {}
    items: dict[str, PrefectFuture] = {}
    for lang in params.langs:
        cell = f"{params.name}:{lang}"
        candidates = candidates_stage.submit(home, cell, params.name, lang, params.langs, params.eclektic, corpus,
                                             force, run_id)
        items[lang] = generate_stage.submit(home, cell, params.name, lang, params.generator, params.eclektic,
                                            candidates, params.budget, force, run_id)
        futures[cell] = {"qa-candidates": candidates, "qa-generate": items[lang]}
    return futures, items


def _xrag_cells(home: str, params: QaBuildParams, corpus: dict[str, StageRef], force: frozenset[str],
                run_id: str) -> Cells:
    """One benchmark-wide chain: pairs span languages, and one question uses both articles of a pair."""
    cell = params.name
    pairs = xrag_pairs_stage.submit(home, cell, params.name, params.langs, params.xrag, corpus, force, run_id)
    related = xrag_related_stage.submit(home, cell, params.name, params.generator, params.xrag, pairs, params.budget,
                                        force, run_id)
    questions = xrag_questions_stage.submit(home, cell, params.name, params.generator, params.xrag, related,
                                            params.budget, force, run_id)
    return ({cell: {"xrag-pairs": pairs, "xrag-related": related, "xrag-questions": questions}},
            {"questions": questions})


@flow(name="qa-build", log_prints=True)
def qa_build_flow(params: QaBuildParams) -> list[dict]:
    """Generate a benchmark's QA items with their parse status, then pre-screen them."""
    home, force = params.home_dir(), params.forced_stages()
    with flow_session(home) as wh:
        params = _this_month(wh, params)
        with tracked_run(wh, "qa-build", params, flow_run.get_id(), logs=False) as run:
            if params.recipe == "eclektic":
                require_qid_coverage(wh, params.name, params.langs)  # one clear line before anything is written
            register_benchmark(wh, params.name, params.recipe, params.langs, params.generator,
                               params.model_dump(mode="json", exclude={"home", "force"}))
            corpus = corpus_refs(wh, params.langs)
            if params.recipe == "eclektic":
                futures, items = _eclektic_cells(home, params, corpus, force, run.run_id)
            else:
                futures, items = _xrag_cells(home, params, corpus, force, run.run_id)
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
    """Distractors (XRAG), then every setting's instances, exported as JSON Lines."""
    home, force = params.home_dir(), params.forced_stages()
    with flow_session(home) as wh:
        if params.live:  # the run records the month it assembled, not the family
            params = params.model_copy(update={"live": False, "benchmark": newest_month(wh, params.benchmark)})
        with tracked_run(wh, "instances", params, flow_run.get_id(), logs=False) as run:
            recipe, langs = benchmark_definition(wh, params.benchmark)
            translations = {f"translate_{lang}": ref for lang in langs
                            if (ref := current_ref(wh, "translate", f"{params.benchmark}>{lang}")) is not None}
            inputs = dict(translations)
            futures: dict[str, dict] = {}
            if recipe == "xrag":
                indexes = {}
                for lang in langs:
                    documents = current_ref(wh, "documents", lang)
                    if documents is None:
                        raise ConfigError(f"{lang}: no documents in the warehouse; run `babelbench corpus ingest --lang {lang}`")
                    indexes[lang] = index_stage.submit(home, lang, documents, params.backend, IndexConfig(), force, run.run_id)
                    futures[lang] = {"index": indexes[lang]}
                distractors = distractors_stage.submit(
                    home, params.benchmark, params.benchmark, params.distractors, params.instances.qc_policy,
                    params.backend, indexes, translations, params.budget, force, run.run_id)
                futures[params.benchmark] = {"distractors": distractors}
                inputs["distractors"] = distractors
            instances = instances_stage.submit(home, params.benchmark, params.benchmark, params.instances, inputs, force,
                                               run.run_id)
            futures.setdefault(params.benchmark, {})["instances"] = instances
            outcomes = collect_outcomes(futures)
            if instances.state.is_completed():
                out = Path(params.out) if params.out else Path(home) / "exports"
                written = export_instances(wh, params.benchmark, out)
                print(f"exported {sum(written.values())} instances to {out / params.benchmark}: {written}")
            return finish_run(run, "instances", outcomes)
