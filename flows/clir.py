"""CLIR flows: build a CLIRMatrix-style collection from the warehouse's corpora."""

from __future__ import annotations

from itertools import permutations

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field, model_validator

from tasks.catalog import descendants, scope
from tasks.index import IndexConfig
from tasks.pairing import ClirConfig
from tasks.settings import resolve_home
from tasks.stages import (
    ClirEvalParams,
    bi_qrels_stage,
    check_language,
    collect_outcomes,
    evaluate_stage,
    finish_run,
    flow_session,
    index_stage,
    log_evaluation,
    multi_qrels_stage,
    register_collection,
    retrieval_stage,
)
from tasks.text import WikiLang
from tasks.tracking import tracked_run


class ClirBuildParams(BaseModel):
    """Parameters of a CLIR collection build (a form in the Prefect UI)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$", description="Collection name.")
    langs: list[WikiLang] = Field(min_length=2, description="Languages; BI covers every ordered pair.")
    multi: bool = Field(False, description="Also build the MULTI collection (languages: clir.multi_languages).")
    backend: str = Field("tantivy", description="Index backend: tantivy (embedded) or elasticsearch.")
    index: IndexConfig = Field(default_factory=IndexConfig)
    clir: ClirConfig = Field(default_factory=ClirConfig)
    home: str | None = None
    force: list[str] = Field(default_factory=list, description="Stages to recompute with their descendants.")

    @model_validator(mode="after")
    def _check_multi(self) -> ClirBuildParams:
        """MULTI over fewer than two languages has no candidates from another language: refuse before any work."""
        if self.multi and len(self.clir.multi_langs(self.langs)) < 2:
            raise ValueError(f"multi needs at least two of the languages {self.langs} in clir.multi_languages "
                             f"{list(self.clir.multi_languages)}")
        return self


@flow(name="clir-build", log_prints=True)
def clir_build_flow(params: ClirBuildParams) -> list[dict]:
    """Index each language, mine labelled title-query hits, project them into BI (and MULTI) qrels."""
    home = str(resolve_home(params.home))
    force = frozenset(descendants(scope("clir-build"), params.force))
    with flow_session(home) as wh, tracked_run(wh, "clir-build", params, flow_run.get_id(), logs=False) as run:
        futures: dict[str, dict] = {}
        documents, hits = {}, {}
        for lang in params.langs:
            documents[lang] = check_language.submit(home, lang, params.clir.min_documents)
            index = index_stage.submit(home, lang, documents[lang], params.backend, params.index, force, run.run_id)
            hits[lang] = retrieval_stage.submit(home, lang, index, params.backend, params.index, params.clir,
                                                force, run.run_id)
            futures[lang] = {"check": documents[lang], "index": index, "retrieval": hits[lang]}
        for src, tgt in permutations(params.langs, 2):
            cell = f"{params.name}:{src}>{tgt}"
            futures[cell] = {"qrels": bi_qrels_stage.submit(
                home, cell, params.name, src, tgt, hits[src], documents[tgt], documents[src], params.clir,
                force, run.run_id)}
        if params.multi:
            multi_langs = params.clir.multi_langs(params.langs)
            multi_hits = {lang: hits[lang] for lang in multi_langs}
            for src in multi_langs:
                cell = f"{params.name}-multi:{src}"
                futures[cell] = {"qrels": multi_qrels_stage.submit(
                    home, cell, f"{params.name}-multi", src, multi_langs, multi_hits, params.clir, force, run.run_id)}
        outcomes = [o for o in collect_outcomes(futures) if o.stage != "check" or o.error]
        register_collection(home, params.name, params.langs, params.multi, params.clir)
        return finish_run(run, "clir-build", outcomes)


@flow(name="clir-eval", log_prints=True)
def clir_eval_flow(params: ClirEvalParams) -> list[dict]:
    """Rank, score with bootstrap intervals, and log one MLflow run per evaluation."""
    home = str(resolve_home(params.home))
    with flow_session(home) as wh, tracked_run(wh, "clir-eval", params, flow_run.get_id()) as run:
        result = evaluate_stage(home, params, run.run_id)
        log_evaluation(home, params, result, run.mlflow_run_id)
        run.finish([])
        return result.metrics
