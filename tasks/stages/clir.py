"""Prefect tasks of the CLIR recipe: language checks, index, retrieval (mining) and qrels cells."""

from __future__ import annotations

import json

from prefect import task
from prefect.states import State

from tasks.catalog import INDEX, QRELS, RETRIEVAL
from tasks.errors import ConfigError
from tasks.index.base import IndexConfig
from tasks.index.corpus import articles_sql, build_index, index_path
from tasks.pairing.config import ClirConfig
from tasks.pairing.mining import mine_language
from tasks.pairing.qrels import build_bi, build_multi
from tasks.stage import ReadFields, StageRef, current_ref, run_stage
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.warehouse.db import upsert

RETRIEVAL_FIELDS = ("top_k", "normalisation", "self_in_jenks", "force_self_label", "classes")
QRELS_FIELDS = ("top_k", "force_self_label", "split_sizes", "split_fractions", "split_seed", "pad", "pad_seed")


@task(name="check-language", task_run_name="check-language[{lang}]")
def check_language(home: str, lang: str, min_documents: int) -> StageRef:
    """The language's current documents, or a clear reason why it cannot be part of a collection."""
    wh = shared_warehouse(home)
    ref = current_ref(wh, "documents", lang)
    if ref is None:
        raise ConfigError(f"{lang}: no documents in the warehouse; run `babelbench corpus ingest --lang {lang}` first")
    articles = wh.scalar(f"SELECT count(*) FROM ({articles_sql('page_id')})", [lang])
    if articles < min_documents:
        raise ConfigError(f"{lang}: only {articles} articles, fewer than min_documents={min_documents}; skipped")
    linked = wh.scalar(f"SELECT count(*) FROM ({articles_sql('qid')}) WHERE qid IS NOT NULL", [lang])
    if linked == 0:
        raise ConfigError(f"{lang}: no article has a Wikidata QID (no sitelinks); labels cannot cross languages; skipped")
    return ref


@stage_task("index")
def index_stage(home: str, cell: str, documents: StageRef, backend: str, config: IndexConfig,
                force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *config.build_fields(), backend=backend)
    return as_task_result(run_stage(
        wh, INDEX, cell, read, {"documents": documents},
        lambda fp: build_index(wh, cell, backend, config, fp), force=forced(INDEX.name, force), run_id=run_id))


@stage_task("retrieval")
def retrieval_stage(home: str, cell: str, index: StageRef, backend: str, index_config: IndexConfig,
                    clir: ClirConfig, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(clir, *RETRIEVAL_FIELDS, title_boost=index_config.title_boost)
    path = index_path(wh.home, backend, cell, index.fingerprint)
    return as_task_result(run_stage(
        wh, RETRIEVAL, cell, read, {"index": index},
        lambda fp: mine_language(wh, cell, backend, path, index_config, clir, fp),
        force=forced(RETRIEVAL.name, force), run_id=run_id))


@stage_task("qrels")
def bi_qrels_stage(home: str, cell: str, collection: str, src: str, tgt: str, src_hits: StageRef,
                   tgt_documents: StageRef, src_documents: StageRef, clir: ClirConfig,
                   force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    inputs = {"src_hits": src_hits, "src_documents": src_documents, "tgt_documents": tgt_documents}
    return as_task_result(run_stage(
        wh, QRELS, cell, ReadFields.of(clir, *QRELS_FIELDS), inputs,
        lambda fp: build_bi(wh, collection, src, tgt, clir, cell, fp), force=forced(QRELS.name, force), run_id=run_id))


@stage_task("qrels")
def multi_qrels_stage(home: str, cell: str, collection: str, src: str, langs: list[str], hits: dict[str, StageRef],
                      clir: ClirConfig, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    read = ReadFields.of(clir, *QRELS_FIELDS, langs=sorted(langs))
    return as_task_result(run_stage(
        wh, QRELS, cell, read, {f"hits_{lang}": ref for lang, ref in sorted(hits.items())},
        lambda fp: build_multi(wh, collection, langs, src, clir, cell, fp), force=forced(QRELS.name, force), run_id=run_id))


@task(name="register-collection")
def register_collection(home: str, name: str, langs: list[str], multi: bool, clir: ClirConfig) -> None:
    """Record (or update) the collection's definition so evaluations and exports can find it."""
    wh = shared_warehouse(home)
    with wh.transaction() as cur:
        upsert(cur, "clir_collections", [[name, langs, multi, json.dumps(clir.model_dump(mode="json"))]], then="now()")
