"""XRAG related pairs: articles that mention the same entities, then an LLM relatedness check.

The paper's news rule (two shared named entities, at most 14 days apart) on Wikipedia: entities are the
titles an article mentions, keyed by QID so they compare across languages, an article's own subject among
them; the last revision's timestamp stands in for the date.  A cross-language pair is about two different
entities (the same QID is a translation).  The ``max_pairs`` best pairs of each group are ``candidate`` rows
until :func:`check_related` decides; pairs outside the date window are never formed, and those past ``max_pairs``
are counted in the stage's message (at a wiki's size they are millions, see :mod:`tasks.qa.entity_join`).

See ``docs/xrag.md``, "Pairs and questions".
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tasks.compute import release_freed_memory
from tasks.distractors.filters import parse_timestamp
from tasks.dumps.titles import language_names
from tasks.errors import BabelbenchError
from tasks.index.corpus import Articles
from tasks.llm import Budget, BudgetLedger, LLMClient, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import Parsed
from tasks.llm.verdicts import YES_NO, read_yes_no
from tasks.placement import resolve
from tasks.progress import Progress
from tasks.qa.entity_join import top_pairs
from tasks.qa.pairing_articles import Article, ArticleTable, EntityCodes
from tasks.qa.window import Window
from tasks.qa.xrag_articles import article_texts
from tasks.qa.xrag_config import XragConfig
from tasks.rankers.dense import DenseRanker, top_k
from tasks.stage import StageOutput
from tasks.text.entities import EntityMatcher
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

RELATED_TEMPLATE = "xrag_related"
RELATED_TAG = "related"
ENTITIES, DENSE = "entities", "dense"  # related_pairs.method
UNRELATED = "the check judged them unrelated"
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class PairCandidate:
    """Two articles meeting the entity rule (or close by dense similarity)."""

    a: Article  # the pivot article (the lower page id of a pivot–pivot pair)
    b: Article
    shared: tuple[str, ...]  # the shared entities; for a dense pair, the cosine as text
    days_apart: float | None
    status: str = "candidate"
    reason: str | None = None
    similarity: float | None = None  # set for dense pairs

    @property
    def method(self) -> str:
        return ENTITIES if self.similarity is None else DENSE

    @property
    def score(self) -> float:
        """Shared entities, or the cosine (below 1, so entity evidence ranks first within a group)."""
        return float(len(self.shared)) if self.similarity is None else self.similarity

    @property
    def pair_id(self) -> str:
        return pair_id(self.a.key, self.b.key)

    @property
    def group(self) -> str:
        """What ``max_pairs`` counts over: the pair kind, and the other language for cross-language pairs."""
        return "monolingual" if self.a.lang == self.b.lang else f"crosslingual {self.a.lang}–{self.b.lang}"


def pair_id(key_a: str, key_b: str) -> str:
    """``<lang>:<page_id>~<lang>:<page_id>``: readable, and the same for the same two articles in every run."""
    return f"{key_a}~{key_b}"


def load_articles(wh: Warehouse, lang: str, codes: EntityCodes, window: Window | None = None) -> ArticleTable:
    """The articles of ``lang`` (those new in ``window``, when given) with the entities their texts mention (their
    own QID excluded), as codes of ``codes``."""
    matcher = EntityMatcher({form: codes.code(qid) for form, qid in language_names(wh, lang).items()}, lang)
    rows = Articles(wh, lang, "page_id, qid, title, text, timestamp", around=(
        "SELECT a.*, dd.first_dump, dd.on_or_before FROM ({articles}) a"
        " LEFT JOIN document_dates dd ON dd.lang = $lang AND dd.page_id = a.page_id ORDER BY a.page_id"))
    articles = ArticleTable(lang, codes)
    with Progress(f"entities {lang}", len(rows), "article") as progress:
        for page_id, qid, title, text, timestamp, first, on_or_before in rows:
            progress.advance()
            if window is not None and window.outside(first, on_or_before):
                continue
            where = f"{lang}:{page_id} ({title})"
            articles.add(page_id, qid, title, parse_timestamp(timestamp, where), matcher.find(text or ""),
                         first if window is not None else None)
    # the texts read and the matcher are garbage now, some of it in cycles: handed back before the join, they
    # would otherwise stay under it (0.4 GB at a million articles)
    del matcher, rows
    gc.collect()
    release_freed_memory()
    return articles


def _days_apart(a: Article, b: Article) -> float | None:
    """Days between the two articles: by first appearance in a live build, else by last revision."""
    if a.first_seen is not None and b.first_seen is not None:
        return float(abs((a.first_seen - b.first_seen).days))
    if a.timestamp is None or b.timestamp is None:
        return None
    return abs((a.timestamp - b.timestamp).total_seconds()) / SECONDS_PER_DAY


@dataclass(frozen=True)
class Pairing:
    """The pairs a build keeps (at most ``max_pairs`` per group), how many more met the rule in each group, and
    the entities left out as too common."""

    pairs: list[PairCandidate]
    beyond: Counter[str]
    hubs: frozenset[str]


def _in_window(pair: PairCandidate, config: XragConfig) -> bool:
    return config.max_days_apart is None or pair.days_apart is None or pair.days_apart <= config.max_days_apart


def _shared(a: Article, b: Article, hubs: frozenset[str]) -> PairCandidate:
    return PairCandidate(a, b, tuple(sorted((a.evidence & b.evidence) - hubs)), _days_apart(a, b))


def _meets_entity_rule(a: Article, b: Article, hubs: frozenset[str], config: XragConfig) -> bool:
    """Whether ``a`` (pivot) and ``b`` are an entity pair: enough shared entities, two different ones, in the window."""
    pair = _shared(a, b, hubs)
    distinct = (b.page_id > a.page_id) if a.lang == b.lang else (a.qid is not None and b.qid is not None and a.qid != b.qid)
    return distinct and len(pair.shared) >= config.min_shared_entities and _in_window(pair, config)


def candidate_pairs(pivot: ArticleTable, others: dict[str, ArticleTable], config: XragConfig,
                    dense: Iterable[PairCandidate] = ()) -> Pairing:
    """The pairs meeting the entity rule within the date window, then the ``dense`` ones the rule did not find: per
    group (see :attr:`PairCandidate.group`), the ``max_pairs`` best by score, then pair id.

    ``others`` maps each non-pivot language to its articles.  Pairs outside the window are never formed (the
    window is part of the join); those ranked past ``max_pairs`` are counted in :attr:`Pairing.beyond`.
    """
    sides = [("monolingual", pivot, None)] if "monolingual" in config.pair_kinds else []
    if "crosslingual" in config.pair_kinds:
        sides += [(f"crosslingual {config.pivot}–{lang}", pivot, articles) for lang, articles in others.items()]
    groups: dict[str, list[PairCandidate]] = {}
    beyond: Counter[str] = Counter()
    hubs: dict[str, frozenset[str]] = {}
    pivot_side = pivot.side()  # every group's left side: its arrays are built once
    for group, left, right in sides:
        ranked = top_pairs(pivot_side, None if right is None else right.side(),
                           min_shared=config.min_shared_entities, max_days=config.max_days_apart,
                           max_entity_articles=config.max_entity_articles, limit=config.max_pairs)
        hubs[group] = left.codes.qids_of(ranked.hubs)
        groups[group] = [_shared(left[a], (left if right is None else right)[b], hubs[group])
                         for a, b, _ in ranked.pairs]
        beyond[group] += ranked.total - len(ranked.pairs)
    listed = {pair.pair_id for pairs in groups.values() for pair in pairs}
    for pair in sorted(dense, key=lambda p: (-p.score, p.pair_id)):
        if pair.pair_id in listed or not _in_window(pair, config):
            continue
        kept = groups.setdefault(pair.group, [])
        if len(kept) < config.max_pairs:
            kept.append(pair)
        elif not _meets_entity_rule(pair.a, pair.b, hubs.get(pair.group, frozenset()), config):
            beyond[pair.group] += 1  # (an entity pair past the cap is counted already)
    return Pairing(sorted((pair for pairs in groups.values() for pair in pairs), key=lambda p: p.pair_id),
                   +beyond, frozenset().union(*hubs.values()))


def dense_pairs(wh: Warehouse, pivot: ArticleTable, others: dict[str, ArticleTable], config: XragConfig,
                embedder: DenseRanker) -> list[PairCandidate]:
    """For each article of another language, its ``dense_k`` nearest pivot articles at ``min_similarity`` or
    more, leaving out its own translation (same QID); embeddings come from the lake cache of the dense ranker."""
    pivot_ids, pivot_vectors = embedder.document_vectors(wh, config.pivot)
    found = []
    for lang, articles in others.items():
        ids, vectors = embedder.document_vectors(wh, lang)
        for page_id, hits in zip(ids, top_k(vectors, pivot_vectors, pivot_ids, config.dense_k + 1), strict=True):
            b = articles.find(int(page_id))
            near = [(pivot.find(hit), cosine) for hit, cosine in hits]
            near = [(a, cosine) for a, cosine in near
                    if b is not None and a is not None and cosine >= config.min_similarity and not (a.qid and a.qid == b.qid)]
            found += [PairCandidate(a, b, (f"cosine {cosine:.3f}",), _days_apart(a, b), similarity=cosine)
                      for a, cosine in near[: config.dense_k]]
    return found


def find_pairs(wh: Warehouse, benchmark: str, langs: list[str], config: XragConfig, fp: str) -> StageOutput:
    """Write the benchmark's ``related_pairs``: the candidates to check."""
    codes = EntityCodes()
    pivot = load_articles(wh, config.pivot, codes, config.window)
    if not pivot:
        new = f" new in the window {config.window}" if config.window else ""
        raise BabelbenchError(f"benchmark {benchmark}: no {config.pivot} articles{new} in the warehouse (the pivot language)")
    crosslingual = "crosslingual" in config.pair_kinds
    others = {lang: load_articles(wh, lang, codes, config.window)
              for lang in langs if lang != config.pivot and crosslingual}
    dense = dense_pairs(wh, pivot, others, config, DenseRanker(config.dense_model, resolve(config.device))) if config.dense_model else []
    pairing = candidate_pairs(pivot, others, config, dense)
    rows = [
        [benchmark, p.pair_id, p.a.lang, p.a.page_id, p.b.lang, p.b.page_id, p.method, list(p.shared),
         p.score, p.days_apart, p.status, p.reason, fp]
        for p in pairing.pairs
    ]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM related_pairs WHERE benchmark = ?", [benchmark])
        if rows:
            cur.executemany("INSERT INTO related_pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    counts = dict(Counter(p.group for p in pairing.pairs))
    beyond = f"; past max_pairs {config.max_pairs}, not kept: {dict(pairing.beyond)}" if pairing.beyond else ""
    hubs = (f"; {len(pairing.hubs)} entities in more than {config.max_entity_articles} articles of a language left out"
            if pairing.hubs else "")
    log.info("%s: candidate pairs %s%s%s", benchmark, counts, beyond, hubs)
    return StageOutput(rows=len(rows), message=f"{len(rows)} candidate pairs ({counts}){beyond}{hubs}")


def parse_related(text: str, lang: str) -> Parsed:
    """The check's verdict (value: :class:`tasks.llm.verdicts.Verdict`) from the reply's JSON, else its
    ``<related>`` tag or plain words, read strictly."""
    return read_yes_no(text, lang, tag=RELATED_TAG)


def check_related(
    wh: Warehouse, client: LLMClient, benchmark: str, generator: str, config: XragConfig, fp: str,
    budget: Budget | BudgetLedger | None = None,
) -> StageOutput:
    """One yes/no call per pair; rewrites the benchmark's pairs with each verdict, in one transaction.

    Every pair is asked on every run: verdicts already given come
    back from the call cache for free, so a run stopped by its budget resumes.
    """
    names, rows = wh.query_with_columns("SELECT * FROM related_pairs WHERE benchmark = ? ORDER BY pair_id", [benchmark])
    pairs = [dict(zip(names, row)) for row in rows]
    texts = article_texts(wh, {(p[f"lang_{side}"], p[f"page_{side}"]) for p in pairs for side in "ab"})
    spec = client.registry.get(generator)
    requests = []
    for p in pairs:
        a, b = texts[(p["lang_a"], p["page_a"])], texts[(p["lang_b"], p["page_b"])]
        requests.append(prompt_request(
            spec, RELATED_TEMPLATE, max_tokens=config.check_max_tokens, response_format=YES_NO,
            stop=("\n\n",) if spec.mode == "completion" else None,
            title_a=a.title, text_a=a.text[: config.check_chars], title_b=b.title, text_b=b.text[: config.check_chars]))
    results = client.run_sync(generator, requests, stage="xrag-related", budget=budget)
    for p, result in zip(pairs, results, strict=True):
        outcome = item_outcome(result, lambda text, lang=p["lang_a"]: parse_related(text, lang))
        if outcome.ok:
            p["status"], p["reason"] = ("related", None) if outcome.value.value else ("unrelated", UNRELATED)
        else:
            p["status"], p["reason"] = outcome.status, outcome.reason
    with wh.transaction() as cur:
        cur.execute("DELETE FROM related_pairs WHERE benchmark = ?", [benchmark])
        if pairs:
            cur.executemany(f"INSERT INTO related_pairs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                            [[fp if name == "fingerprint" else p[name] for name in names] for p in pairs])
    counts = Counter(p["status"] for p in pairs)
    return StageOutput(rows=len(pairs), message=f"pair statuses: {dict(sorted(counts.items()))}")
