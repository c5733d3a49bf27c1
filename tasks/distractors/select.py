"""The distractor stage: retrieve candidates per item and document language, filter them, keep the best.

Every candidate considered becomes a ``distractors`` row, kept or rejected
with its reason, so a thin language or an over-eager rule shows in the
warehouse rather than as a silently short instance. Candidates that pass the
rules are kept in hybrid-rank order up to ``per_lang``; the optional answer
check (an NLI model or an LLM behind a plain callable) is asked in rounds,
each round only about as many top survivors as are still missing, so a paid
check is never spent on a candidate that would not be kept anyway.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tasks.distractors.candidates import Candidate, bm25_hits, dense_hits, fuse
from tasks.distractors.config import DistractorConfig, DistractorQuery
from tasks.distractors.filters import Document, ItemRules, TextForms, load_documents
from tasks.errors import ConfigError
from tasks.index.registry import get_backend
from tasks.placement import resolve
from tasks.rankers.dense import DenseRanker
from tasks.stage import StageOutput
from tasks.text.answer_match import AnswerMatcher
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

AnswerCheck = Callable[[list[tuple[str, str, str]]], list[bool | None]]
"""(question, document text, language) triples → per triple: True it answers the question, False it does not, None
undecided."""

ANSWERS_QUESTION = "answers_question: the answer check says this document answers the question"
UNDECIDED = "unverified: the answer check could not decide; kept (use_unverified_distractors)"
UNDECIDED_OUT = "unverified: the answer check could not decide; not used (set use_unverified_distractors to keep it)"


@dataclass
class _Row:
    """One candidate of one item and language; ``status`` is ``pending`` until the rules and the check settle it."""

    query: DistractorQuery
    lang: str
    doc: Document
    candidate: Candidate
    status: str
    reason: str | None

    @property
    def cell(self) -> tuple[str, str]:
        return self.query.item_id, self.lang


def select_distractors(
    wh: Warehouse,
    benchmark: str,
    queries: Sequence[DistractorQuery],
    config: DistractorConfig,
    fp: str,
    *,
    backend: str,
    index_paths: Mapping[str, Path],
    embedder: DenseRanker | None = None,
    answer_check: AnswerCheck | None = None,
) -> StageOutput:
    """Select and store the distractors of every item of ``benchmark``, replacing its earlier ones.

    ``index_paths`` maps each document language to its BM25 index (built by
    the index stage). ``embedder`` lends an already loaded dense model; it must
    be ``config.dense_model``, which is loaded when no embedder is given.
    """
    items = sorted(queries, key=lambda query: query.item_id)
    duplicates = sorted(item for item, count in Counter(q.item_id for q in items).items() if count > 1)
    if duplicates:
        raise ConfigError(f"{benchmark}: items given more than once: {', '.join(duplicates)}")
    langs = sorted({lang for query in items for lang in query.doc_langs})
    missing = [lang for lang in langs if lang not in index_paths]
    if missing:
        raise ConfigError(f"{benchmark}: no BM25 index given for {', '.join(missing)} (index_paths has {sorted(index_paths)})")
    embedder = _embedder(config, embedder)
    search = get_backend(backend)
    support = _supporting_documents(wh, items)
    forms = TextForms()
    rows: list[_Row] = []
    for lang in langs:
        wanting = [query for query in items if lang in query.doc_langs]
        questions = [query.queries[lang] for query in wanting]
        bm25 = bm25_hits(search, index_paths[lang], lang, questions, config.candidates_k)
        dense = dense_hits(embedder, wh, lang, questions, config.candidates_k, bm25) if embedder else [None] * len(bm25)
        fused = [fuse(hits, near, config) for hits, near in zip(bm25, dense, strict=True)]
        docs = _candidate_documents(wh, lang, fused, index_paths[lang])
        work = list(zip(wanting, fused, strict=True))
        for query, candidates in tqdm(work, desc=f"distractors {lang}", unit="item", disable=None):
            rules = ItemRules(support[query.item_id], AnswerMatcher(query.answers[lang], lang), config, query.before)
            for candidate in candidates:
                doc = docs[candidate.page_id]
                reason = rules.rejection(doc, forms)
                rows.append(_Row(query, lang, doc, candidate, "pending" if reason is None else "rejected", reason))
    _settle(rows, config.per_lang, answer_check, use_unverified=config.use_unverified_distractors)
    with wh.transaction() as cur:
        cur.execute("DELETE FROM distractors WHERE benchmark = ?", [benchmark])
        if rows:
            cur.executemany("INSERT INTO distractors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                [benchmark, row.query.item_id, row.lang, row.doc.page_id, row.doc.title, row.candidate.rank,
                 row.candidate.bm25_score, row.candidate.dense_sim, row.candidate.difficulty, row.status, row.reason, fp]
                for row in rows])
    return _summary(rows, items, config.per_lang)


def _embedder(config: DistractorConfig, embedder: DenseRanker | None) -> DenseRanker | None:
    """The dense model the config names; a lent one must be that model, or the fingerprint would lie."""
    if config.dense_model is None:
        if embedder is not None:
            raise ConfigError(f"an embedder ({embedder.model_name}) was given but the config has no dense_model")
        return None
    if embedder is None:
        return DenseRanker(config.dense_model, resolve(config.device))
    if embedder.model_name != config.dense_model:
        raise ConfigError(f"the embedder is {embedder.model_name!r} but the config's dense_model is {config.dense_model!r}")
    return embedder


def _supporting_documents(wh: Warehouse, items: Sequence[DistractorQuery]) -> dict[str, tuple[Document, ...]]:
    """Each item's supporting documents; one that is not in the warehouse is an error naming the item."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for query in items:
        for lang, page_id in query.supporting:
            wanted[lang].add(page_id)
    found = {lang: load_documents(wh, lang, page_ids) for lang, page_ids in wanted.items()}
    support = {}
    for query in items:
        absent = [f"{lang}:{page_id}" for lang, page_id in query.supporting if page_id not in found[lang]]
        if absent:
            raise ConfigError(
                f"item {query.item_id}: supporting document(s) {', '.join(absent)} not in the warehouse's documents")
        support[query.item_id] = tuple(found[lang][page_id] for lang, page_id in query.supporting)
    return support


def _candidate_documents(wh: Warehouse, lang: str, fused: list[list[Candidate]], index: Path) -> dict[int, Document]:
    """Every candidate's document; a hit the documents do not have means the index is stale."""
    page_ids = {candidate.page_id for candidates in fused for candidate in candidates}
    docs = load_documents(wh, lang, page_ids)
    stale = sorted(page_ids - docs.keys())
    if stale:
        raise ConfigError(f"the {lang} index at {index} returned pages not in the documents ({stale[:5]}); "
                          "rebuild it from the current documents")
    return docs


def _settle(rows: list[_Row], per_lang: int, answer_check: AnswerCheck | None, *, use_unverified: bool) -> None:
    """Keep the best ``per_lang`` candidates the rules (and the answer check) let through; the rest are surplus.

    A candidate the check could not judge may answer the question, so it is not used (the next one is
    tried in its place) unless ``use_unverified``.
    """
    queues: dict[tuple[str, str], deque[_Row]] = defaultdict(deque)
    for row in rows:  # rows are in rank order within each (item, language)
        if row.status == "pending":
            queues[row.cell].append(row)
    kept: Counter[tuple[str, str]] = Counter()
    while batch := _next_round(queues, kept, per_lang):
        verdicts = _ask(answer_check, batch) if answer_check else [False] * len(batch)
        for row, verdict in zip(batch, verdicts, strict=True):
            if verdict:
                row.status, row.reason = "rejected", ANSWERS_QUESTION
            elif verdict is None and not use_unverified:
                row.status, row.reason = "rejected", UNDECIDED_OUT
            else:
                row.status, row.reason = "kept", UNDECIDED if verdict is None else None
                kept[row.cell] += 1
    for queue in queues.values():
        for row in queue:
            row.status, row.reason = "rejected", f"surplus: {per_lang} better-ranked candidates were kept"


def _next_round(queues: dict[tuple[str, str], deque[_Row]], kept: Counter[tuple[str, str]], per_lang: int) -> list[_Row]:
    """The next survivors of each (item, language), as many as it still lacks."""
    batch = []
    for cell, queue in queues.items():
        for _ in range(min(per_lang - kept[cell], len(queue))):
            batch.append(queue.popleft())
    return batch


def _ask(answer_check: AnswerCheck, batch: list[_Row]) -> list[bool | None]:
    verdicts = answer_check([(row.query.queries[row.lang], row.doc.text, row.lang) for row in batch])
    if len(verdicts) != len(batch):
        raise ConfigError(f"the answer check returned {len(verdicts)} verdicts for {len(batch)} documents")
    wrong = [(row.query.item_id, row.doc.key, verdict)
             for row, verdict in zip(batch, verdicts, strict=True) if verdict not in (True, False, None)]
    if wrong:
        raise ConfigError(f"the answer check must answer True, False or None; got {wrong[:3]} (item, document, verdict)")
    return verdicts


def _summary(rows: list[_Row], items: Sequence[DistractorQuery], per_lang: int) -> StageOutput:
    """Issues for every item and language left with fewer than ``per_lang`` distractors; counts for the operator."""
    kept = Counter(row.cell for row in rows if row.status == "kept")
    considered = Counter(row.cell for row in rows)
    issues: list[dict[str, Any]] = [
        {"item": query.item_id, "reason": f"{lang}: {kept[(query.item_id, lang)]} of {per_lang} distractors kept "
                                          f"from {considered[(query.item_id, lang)]} candidates"}
        for query in items for lang in query.doc_langs if kept[(query.item_id, lang)] < per_lang
    ]
    reasons = Counter((row.reason or "").split(":")[0] for row in rows if row.status == "rejected")
    log.info("distractors: %d kept of %d candidates; rejected by %s", sum(kept.values()), len(rows), dict(reasons))
    return StageOutput(rows=len(rows), issues=issues,
                       message=f"{sum(kept.values())} kept of {len(rows)} candidates for {len(items)} items")
