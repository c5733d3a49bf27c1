"""XRAG related pairs: articles that mention the same entities, then an LLM relatedness check.

The paper's news rule (two shared named entities, at most 14 days apart) on Wikipedia: entities are the
titles an article mentions, keyed by QID so they compare across languages, an article's own subject among
them; the last revision's timestamp stands in for the date.  A cross-language pair is about two different
entities (the same QID is a translation).  Pairs cut by the date window or ``max_pairs`` stay as
``filtered`` rows with the reason; the others are ``candidate`` until :func:`check_related` decides.

See ``docs/xrag.md``, "Pairs and questions".
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime

from tqdm import tqdm

from tasks.distractors.filters import parse_timestamp
from tasks.dumps.titles import entity_matcher
from tasks.errors import BabelbenchError
from tasks.index.corpus import articles_sql
from tasks.llm import Budget, BudgetLedger, LLMClient, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import Parsed
from tasks.llm.verdicts import YES_NO, read_yes_no
from tasks.placement import resolve
from tasks.qa.window import Window
from tasks.qa.xrag_articles import article_texts
from tasks.qa.xrag_config import XragConfig
from tasks.rankers.dense import DenseRanker, top_k
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

RELATED_TEMPLATE = "xrag_related"
RELATED_TAG = "related"
ENTITIES, DENSE = "entities", "dense"  # related_pairs.method
UNRELATED = "the check judged them unrelated"
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Article:
    """One article as pairing sees it: identity, timestamp and the entities (QIDs) its text mentions."""

    lang: str
    page_id: int
    qid: str | None
    title: str
    timestamp: datetime | None
    entities: frozenset[str]  # excluding its own QID
    first_seen: date | None = None  # its first-appearance date, set in a live build (a window)

    @property
    def key(self) -> str:
        return f"{self.lang}:{self.page_id}"

    @property
    def evidence(self) -> frozenset[str]:
        """What it can share with another article: the entities it mentions and its own subject."""
        return (self.entities | {self.qid}) if self.qid else self.entities


@dataclass(frozen=True)
class PairCandidate:
    """Two articles meeting the entity rule (or close by dense similarity); ``reason`` says why a ``filtered``
    one was not kept."""

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


def load_articles(wh: Warehouse, lang: str, window: Window | None = None) -> list[Article]:
    """The articles of ``lang`` (those new in ``window``, when given) with the entities their texts mention (their
    own QID excluded)."""
    matcher = entity_matcher(wh, lang)
    rows = wh.query(
        f"SELECT a.*, dd.first_dump, dd.on_or_before FROM ({articles_sql('page_id, qid, title, text, timestamp')}) a"
        " LEFT JOIN document_dates dd ON dd.lang = ? AND dd.page_id = a.page_id ORDER BY a.page_id", [lang, lang])
    articles = []
    for page_id, qid, title, text, timestamp, first, on_or_before in tqdm(
            rows, desc=f"entities {lang}", unit="article", disable=None):
        if window is not None and window.outside(first, on_or_before):
            continue
        where = f"{lang}:{page_id} ({title})"
        entities = frozenset(matcher.find(text or "")) - {qid}
        articles.append(Article(lang, page_id, qid, title, parse_timestamp(timestamp, where), entities,
                                first if window is not None else None))
    return articles


def _index(articles: Iterable[Article]) -> dict[str, list[Article]]:
    index: dict[str, list[Article]] = defaultdict(list)
    for article in articles:
        for entity in article.evidence:
            index[entity].append(article)
    return index


def _days_apart(a: Article, b: Article) -> float | None:
    """Days between the two articles: by first appearance in a live build, else by last revision."""
    if a.first_seen is not None and b.first_seen is not None:
        return float(abs((a.first_seen - b.first_seen).days))
    if a.timestamp is None or b.timestamp is None:
        return None
    return abs((a.timestamp - b.timestamp).total_seconds()) / SECONDS_PER_DAY


def _matches(left: list[Article], right: list[Article], *, same_language: bool, min_shared: int) -> list[PairCandidate]:
    """Pairs (one of ``left``, one of ``right``) sharing at least ``min_shared`` entities, via the index of ``right``."""
    index = _index(right)
    found = []
    for a in left:
        shared: dict[Article, set[str]] = defaultdict(set)
        for entity in a.evidence:
            for b in index.get(entity, ()):
                shared[b].add(entity)
        for b, entities in shared.items():
            if len(entities) < min_shared:
                continue
            if same_language and b.page_id <= a.page_id:
                continue  # each unordered pair once, and never an article with itself
            if not same_language and (a.qid is None or b.qid is None or a.qid == b.qid):
                continue
            found.append(PairCandidate(a, b, tuple(sorted(entities)), _days_apart(a, b)))
    return found


def candidate_pairs(pivot: list[Article], others: dict[str, list[Article]], config: XragConfig,
                    dense: Iterable[PairCandidate] = ()) -> list[PairCandidate]:
    """Every pair meeting the entity rule, plus the ``dense`` ones not found by it, with the date window and
    ``max_pairs`` marked as ``filtered``.

    ``others`` maps each non-pivot language to its articles.  Within a group
    (see :attr:`PairCandidate.group`) the pairs in the window are ranked by
    score, then pair id, and those past ``max_pairs`` are filtered.
    """
    found = []
    if "monolingual" in config.pair_kinds:
        found += _matches(pivot, pivot, same_language=True, min_shared=config.min_shared_entities)
    if "crosslingual" in config.pair_kinds:
        for articles in others.values():
            found += _matches(pivot, articles, same_language=False, min_shared=config.min_shared_entities)
    by_entities = {pair.pair_id for pair in found}
    found += [pair for pair in dense if pair.pair_id not in by_entities]
    found.sort(key=lambda p: (-p.score, p.pair_id))
    kept: Counter[str] = Counter()
    result = []
    for pair in found:
        window = config.max_days_apart
        if window is not None and pair.days_apart is not None and pair.days_apart > window:
            pair = replace(pair, status="filtered", reason=f"{pair.days_apart:.1f} days apart > max_days_apart {window:g}")
        elif kept[pair.group] >= config.max_pairs:
            pair = replace(pair, status="filtered", reason=f"beyond max_pairs {config.max_pairs} for {pair.group}")
        else:
            kept[pair.group] += 1
        result.append(pair)
    return sorted(result, key=lambda p: p.pair_id)


def dense_pairs(wh: Warehouse, pivot: list[Article], others: dict[str, list[Article]], config: XragConfig,
                embedder: DenseRanker) -> list[PairCandidate]:
    """For each article of another language, its ``dense_k`` nearest pivot articles at ``min_similarity`` or
    more, leaving out its own translation (same QID); embeddings come from the lake cache of the dense ranker."""
    pivot_ids, pivot_vectors = embedder.document_vectors(wh, config.pivot)
    pivot_by_id = {article.page_id: article for article in pivot}
    found = []
    for lang, articles in others.items():
        ids, vectors = embedder.document_vectors(wh, lang)
        by_id = {article.page_id: article for article in articles}
        for page_id, hits in zip(ids, top_k(vectors, pivot_vectors, pivot_ids, config.dense_k + 1), strict=True):
            b = by_id.get(int(page_id))
            near = [(pivot_by_id.get(hit), cosine) for hit, cosine in hits]
            near = [(a, cosine) for a, cosine in near
                    if b is not None and a is not None and cosine >= config.min_similarity and not (a.qid and a.qid == b.qid)]
            found += [PairCandidate(a, b, (f"cosine {cosine:.3f}",), _days_apart(a, b), similarity=cosine)
                      for a, cosine in near[: config.dense_k]]
    return found


def find_pairs(wh: Warehouse, benchmark: str, langs: list[str], config: XragConfig, fp: str) -> StageOutput:
    """Write the benchmark's ``related_pairs``: candidates to check and the filtered ones with their reason."""
    pivot = load_articles(wh, config.pivot, config.window)
    if not pivot:
        new = f" new in the window {config.window}" if config.window else ""
        raise BabelbenchError(f"benchmark {benchmark}: no {config.pivot} articles{new} in the warehouse (the pivot language)")
    crosslingual = "crosslingual" in config.pair_kinds
    others = {lang: load_articles(wh, lang, config.window) for lang in langs if lang != config.pivot and crosslingual}
    dense = dense_pairs(wh, pivot, others, config, DenseRanker(config.dense_model, resolve(config.device))) if config.dense_model else []
    pairs = candidate_pairs(pivot, others, config, dense)
    rows = [
        [benchmark, p.pair_id, p.a.lang, p.a.page_id, p.b.lang, p.b.page_id, p.method, list(p.shared),
         p.score, p.days_apart, p.status, p.reason, fp]
        for p in pairs
    ]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM related_pairs WHERE benchmark = ?", [benchmark])
        if rows:
            cur.executemany("INSERT INTO related_pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    counts = Counter(p.group for p in pairs if p.status == "candidate")
    filtered = sum(p.status == "filtered" for p in pairs)
    log.info("%s: candidate pairs %s; %d filtered", benchmark, dict(counts), filtered)
    return StageOutput(rows=len(rows),
                       message=f"{sum(counts.values())} candidate pairs ({dict(counts)}), {filtered} filtered")


def parse_related(text: str, lang: str) -> Parsed:
    """The check's verdict (value: :class:`tasks.llm.verdicts.Verdict`) from the reply's JSON, else its
    ``<related>`` tag or plain words, read strictly."""
    return read_yes_no(text, lang, tag=RELATED_TAG)


def check_related(
    wh: Warehouse, client: LLMClient, benchmark: str, generator: str, config: XragConfig, fp: str,
    budget: Budget | BudgetLedger | None = None,
) -> StageOutput:
    """One yes/no call per unfiltered pair; rewrites the benchmark's pairs with each verdict, in one transaction.

    Every unfiltered pair is asked on every run: verdicts already given come
    back from the call cache for free, so a run stopped by its budget resumes.
    """
    names, rows = wh.query_with_columns("SELECT * FROM related_pairs WHERE benchmark = ? ORDER BY pair_id", [benchmark])
    pairs = [dict(zip(names, row)) for row in rows]
    asked = [p for p in pairs if p["status"] != "filtered"]
    texts = article_texts(wh, {(p[f"lang_{side}"], p[f"page_{side}"]) for p in asked for side in "ab"})
    spec = client.registry.get(generator)
    requests = []
    for p in asked:
        a, b = texts[(p["lang_a"], p["page_a"])], texts[(p["lang_b"], p["page_b"])]
        requests.append(prompt_request(
            spec, RELATED_TEMPLATE, max_tokens=config.check_max_tokens, response_format=YES_NO,
            stop=("\n\n",) if spec.mode == "completion" else None,
            title_a=a.title, text_a=a.text[: config.check_chars], title_b=b.title, text_b=b.text[: config.check_chars]))
    results = client.run_sync(generator, requests, stage="xrag-related", budget=budget)
    for p, result in zip(asked, results):
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
