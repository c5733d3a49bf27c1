"""Prefect tasks of the QA recipes: ECLEKTIC and XRAG items, the QC pre-screen, translation, instances.

The model stages among them run through :func:`tasks.stages.paid.run_paid` (one budget per flow run,
unfinished items retried).
"""

from __future__ import annotations

from functools import partial

from prefect.states import State

from tasks.catalog import (
    CANDIDATES,
    DISTRACTORS,
    GENERATE,
    INSTANCES,
    PRESCREEN,
    TRANSLATE,
    XRAG_PAIRS,
    XRAG_QUESTIONS,
    XRAG_RELATED,
)
from tasks.distractors import AnswerCheck, DistractorConfig, answer_check, select_distractors
from tasks.dumps.appearance import appearance_digest
from tasks.index.corpus import index_path
from tasks.instances.build import InstanceConfig, build_instances
from tasks.llm import Budget, template_hash
from tasks.placement import placement_params
from tasks.qa import eclektic, qc, xrag, xrag_pairs
from tasks.qa.eclektic import EclekticConfig
from tasks.qa.qc import QcConfig
from tasks.qa.units import distractor_queries, translation_units
from tasks.qa.xrag_config import XragConfig
from tasks.stage import ReadFields, StageOutput, StageRef, current_ref, digest, rows_digest, run_stage
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished
from tasks.translate import TRANSLATE_TEMPLATE, TranslateConfig, translate_units
from tasks.warehouse.db import Warehouse


def corpus_refs(wh: Warehouse, langs: list[str]) -> dict[str, StageRef]:
    """The current documents, appearance and sitelinks outputs of ``langs``: what a QA build reads from the corpus
    (a live build's window reads the first-appearance dates)."""
    refs = {}
    for lang in langs:
        for stage in ("documents", "appearance", "sitelinks"):
            ref = current_ref(wh, stage, lang)
            if ref is not None:
                refs[f"{stage}_{lang}"] = ref
    return refs


def instance_inputs_digest(wh: Warehouse, benchmark: str) -> str:
    """What the instances of a benchmark are assembled from: each item's QC outcome and answer (people's
    decisions change them outside any stage), the translations' and the distractors' ids and statuses."""
    return digest([
        wh.query("SELECT item_id, qc_status, answer FROM qa_status WHERE benchmark = ? ORDER BY ALL", [benchmark]),
        wh.query("SELECT item_id, field, tgt_lang, status, gate FROM translations WHERE benchmark = ? ORDER BY ALL",
                 [benchmark]),
        wh.query("SELECT item_id, lang, page_id, status FROM distractors WHERE benchmark = ? ORDER BY ALL", [benchmark]),
    ])


@stage_task("qa-candidates")
def candidates_stage(home: str, cell: str, benchmark: str, lang: str, langs: list[str], config: EclekticConfig,
                     corpus: dict[str, StageRef], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(config, "min_chars", "page_views", "min_page_views", "per_lang", "sample_seed", "window",
                         langs=sorted(langs))
    return as_task_result(run_stage(
        wh, CANDIDATES, cell, read, corpus,
        lambda fp: eclektic.select_candidates(wh, benchmark, lang, langs, config, fp),
        force=forced(CANDIDATES.name, force), run_id=run_id))


@stage_task("qa-generate")
def generate_stage(home: str, cell: str, benchmark: str, lang: str, generator: str, config: EclekticConfig,
                   candidates: StageRef, budget: Budget, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(config, "context_sentences", "max_tokens", "window", generator=generator,
                         template=template_hash(eclektic.TEMPLATE))
    return run_paid(
        home, GENERATE, cell, read, {"candidates": candidates},
        lambda client, ledger, fp: eclektic.generate_items(wh, client, benchmark, lang, generator, config, fp,
                                                           budget=ledger),
        retry=unfinished(wh, "qa_items", "benchmark = ? AND recipe = 'eclektic' AND lang = ?", [benchmark, lang]),
        force=force, budget=budget, run_id=run_id)


@stage_task("xrag-pairs")
def xrag_pairs_stage(home: str, cell: str, benchmark: str, langs: list[str], config: XragConfig,
                     corpus: dict[str, StageRef], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Candidate article pairs of the whole benchmark (pairs span languages, so one cell)."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, "pivot", "min_shared_entities", "max_days_apart", "max_pairs", "pair_kinds",
                         "window", "dense_model", "min_similarity", "dense_k", langs=sorted(langs),
                         **placement_params(config.dense_model, config.device))
    return as_task_result(run_stage(
        wh, XRAG_PAIRS, cell, read, corpus, lambda fp: xrag_pairs.find_pairs(wh, benchmark, langs, config, fp),
        force=forced(XRAG_PAIRS.name, force), run_id=run_id))


@stage_task("xrag-related")
def xrag_related_stage(home: str, cell: str, benchmark: str, generator: str, config: XragConfig, pairs: StageRef,
                       budget: Budget, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """The LLM relatedness check of every candidate pair."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, "check_chars", "check_max_tokens", generator=generator,
                         template=template_hash(xrag_pairs.RELATED_TEMPLATE))
    return run_paid(
        home, XRAG_RELATED, cell, read, {"pairs": pairs},
        lambda client, ledger, fp: xrag_pairs.check_related(wh, client, benchmark, generator, config, fp, budget=ledger),
        retry=unfinished(wh, "related_pairs", "benchmark = ?", [benchmark]),
        force=force, budget=budget, run_id=run_id)


@stage_task("xrag-questions")
def xrag_questions_stage(home: str, cell: str, benchmark: str, generator: str, config: XragConfig, related: StageRef,
                         budget: Budget, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Summary → simple QA → typed questions → answers over the related pairs."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *XragConfig.model_fields, generator=generator,
                         templates=[template_hash(name) for name in xrag.TEMPLATES],
                         pairs=rows_digest(wh, "SELECT pair_id, status FROM related_pairs WHERE benchmark = ? ORDER BY ALL",
                                           [benchmark]))
    return run_paid(
        home, XRAG_QUESTIONS, cell, read, {"related": related},
        lambda client, ledger, fp: xrag.generate_questions(wh, client, benchmark, generator, config, fp, budget=ledger),
        retry=unfinished(wh, "qa_items", "benchmark = ? AND recipe = 'xrag'", [benchmark]),
        force=force, budget=budget, run_id=run_id)


@stage_task("qa-prescreen")
def prescreen_stage(home: str, cell: str, benchmark: str, judge: str | None, config: QcConfig,
                    items: dict[str, StageRef], budget: Budget, force: frozenset[str],
                    run_id: str) -> StageRef | State[StageRef]:
    """Rule checks of every generated item, and the LLM pre-screen when a ``judge`` is named."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *QcConfig.model_fields, judge=judge, template=template_hash(qc.TEMPLATE),
                         items=rows_digest(wh, "SELECT item_id, status FROM qa_items WHERE benchmark = ? ORDER BY ALL",
                                           [benchmark]))
    again = bool(wh.scalar(
        "SELECT count(*) FROM qa_reviews WHERE benchmark = ? AND source = 'prescreen' AND verdict = 'unsure'"
        " AND reason LIKE 'pre-screen call %'", [benchmark]))
    return run_paid(
        home, PRESCREEN, cell, read, items,
        lambda client, ledger, fp: qc.prescreen(wh, client, benchmark, judge, config, fp, budget=ledger),
        retry=again, force=force, budget=budget, run_id=run_id)


@stage_task("instances")
def instances_stage(home: str, cell: str, benchmark: str, config: InstanceConfig, inputs: dict[str, StageRef],
                    force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *InstanceConfig.model_fields, read=instance_inputs_digest(wh, benchmark))
    return as_task_result(run_stage(
        wh, INSTANCES, cell, read, inputs, lambda fp: build_instances(wh, benchmark, config, fp),
        force=forced(INSTANCES.name, force), run_id=run_id))


@stage_task("translate")
def translate_stage(home: str, cell: str, benchmark: str, tgt_lang: str, translator: str, config: TranslateConfig,
                    qc_policy: str, items: StageRef | None, budget: Budget, force: frozenset[str],
                    run_id: str) -> StageRef | State[StageRef]:
    """One target language; the units (accepted items' fields) are part of the fingerprint, so a review
    that accepts or rejects items recomputes the cell — unchanged units come back from the call cache."""
    wh = shared_warehouse(home)
    units = translation_units(wh, benchmark, tgt_lang, qc_policy)
    read = ReadFields.of(config, *TranslateConfig.model_fields, translator=translator,
                         template=template_hash(TRANSLATE_TEMPLATE), units=digest([u.model_dump() for u in units]))
    return run_paid(
        home, TRANSLATE, cell, read, {"items": items} if items else {},
        lambda client, ledger, fp: translate_units(wh, client, benchmark, units, tgt_lang, translator, config, fp,
                                                   budget=ledger),
        retry=unfinished(wh, "translations", "benchmark = ? AND tgt_lang = ?", [benchmark, tgt_lang]),
        force=force, budget=budget, run_id=run_id)


@stage_task("distractors")
def distractors_stage(home: str, cell: str, benchmark: str, config: DistractorConfig, qc_policy: str, backend: str,
                      indexes: dict[str, StageRef], translations: dict[str, StageRef], budget: Budget,
                      force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Distractor candidates for every accepted XRAG item, searched in each language's index; with an
    ``answer_checker`` a model also vets the survivors (paid, so it spends from the run's budget).

    A live item's distractors must have appeared before its window, so the first-appearance dates of its languages
    are read too: ingesting an older dump later moves them back and recomputes the cell (the index alone would not
    change once the newest dump is ingested again).  Items without a window read no dates, and their cells keep
    their fingerprints."""
    wh = shared_warehouse(home)
    queries = distractor_queries(wh, benchmark, qc_policy)
    checking = config.answer_checker is not None
    dated = sorted({lang for q in queries if q.before is not None for lang in q.doc_langs})
    read = ReadFields.of(config, *DistractorConfig.model_fields, backend=backend,
                         queries=digest([q.model_dump() for q in queries]),
                         template=template_hash(answer_check.TEMPLATE) if checking else None,
                         **placement_params(config.dense_model, config.device),
                         **({"appearance": appearance_digest(wh, dated)} if dated else {}))
    paths = {lang: index_path(wh.home, backend, lang, ref.fingerprint) for lang, ref in indexes.items()}
    inputs = {f"index_{k}": v for k, v in indexes.items()} | translations

    def select(check: AnswerCheck | None, fp: str) -> StageOutput:
        return select_distractors(wh, benchmark, queries, config, fp, backend=backend, index_paths=paths,
                                  answer_check=check)

    if not checking:
        return as_task_result(run_stage(wh, DISTRACTORS, cell, read, inputs, partial(select, None),
                                        force=forced(DISTRACTORS.name, force), run_id=run_id))
    unverified = wh.scalar("SELECT count(*) FROM distractors WHERE benchmark = ? AND starts_with(reason, 'unverified')",
                           [benchmark])
    return run_paid(
        home, DISTRACTORS, cell, read, inputs,
        lambda client, ledger, fp: select(
            answer_check.llm_answer_check(client, config.answer_checker, config, budget=ledger), fp),
        retry=bool(unverified), force=force, budget=budget, run_id=run_id)
