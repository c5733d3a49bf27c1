"""XRAG cross-document questions over the related pairs: summary → simple QA → typed questions → answers.

The paper's four model steps, each run as one batch over the whole benchmark
(every summary in one call of the client, then every simple-QA prompt, …), so
a budget stop leaves the later steps ``skipped_budget`` and a rerun gets the
finished calls back from the cache and pays only for the rest.  One budget
ledger spans the four steps.

a. ``summary`` of each article in its own language, shared by every pair the
   article is in (key ``<lang>:<page_id>``);
b. ``simple_qa``: simple question–answer pairs ("facts") about each summary,
   in the pivot language (same key);
c. ``question``: per pair and question type, one prompt showing both
   articles' facts numbered A1…, B1… that writes up to ``questions_per_type``
   questions and names the facts each uses (key ``<pair_id>:<qtype>``);
d. ``answer`` to each question from the facts it uses and both articles with
   their dates (key ``<pair_id>:<qtype>:<n>``).

Every step's outcome is a ``qa_steps`` row and every question slot a
``qa_items`` row (see :mod:`tasks.qa.xrag_items`).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from functools import partial

from tasks.errors import BabelbenchError
from tasks.llm import Budget, BudgetLedger, LLMClient, ModelSpec, prompt_request
from tasks.llm.parsing import parse_qa_pairs
from tasks.qa.xrag_articles import ArticleText, article_texts
from tasks.qa.xrag_config import XragConfig
from tasks.qa.xrag_items import RECIPE, Pair, item_rows, used_facts
from tasks.qa.xrag_questions import ANSWER_TAG, SUMMARY_TAG, parse_answer, parse_summary, parse_typed_questions
from tasks.qa.xrag_steps import Batch, Step
from tasks.stage import StageOutput
from tasks.text.languages import rule_for
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import insert_records

log = logging.getLogger(__name__)

SUMMARY_TEMPLATE = "xrag_summary"
SIMPLE_QA_TEMPLATE = "xrag_simple_qa"
ANSWER_TEMPLATE = "xrag_answer"
QUESTION_TEMPLATES = {qtype: f"xrag_q_{qtype}" for qtype in ("aggregation", "comparison", "multihop", "set")}
#: Every template of the chain, for the stage fingerprint.
TEMPLATES = (SUMMARY_TEMPLATE, SIMPLE_QA_TEMPLATE, *QUESTION_TEMPLATES.values(), ANSWER_TEMPLATE)
#: Pair statuses whose slots are recorded: related pairs are asked, failed checks are carried to their items.
CARRIED = ("related", "parse_failed", "call_failed", "skipped_budget")
PRIMED_QUESTION = "Question:"
PRIMED_USES = "Uses: A"  # the typed-question prompts put each question's facts first


@dataclass(frozen=True)
class _Chain:
    """What every step's prompts need: the model, the config, the articles and the shared budget ledger."""

    client: LLMClient
    generator: str
    spec: ModelSpec
    config: XragConfig
    articles: dict[tuple[str, int], ArticleText]
    ledger: BudgetLedger

    @property
    def completion(self) -> bool:
        return self.spec.mode == "completion"

    def primed(self, label: str) -> str:
        """The label a completion prompt ends with, which the reply therefore lacks (chat prompts end without it)."""
        return label if self.completion else ""

    def summaries(self, related: list[Pair]) -> dict[str, Step]:
        batch, config = Batch("summary"), self.config
        for lang, page_id in sorted({doc for pair in related for doc in (pair.a, pair.b)}):
            article = self.articles[(lang, page_id)]
            batch.add(f"{lang}:{page_id}", lang, prompt_request(
                self.spec, SUMMARY_TEMPLATE, max_tokens=config.summary_max_tokens, stop=(f"</{SUMMARY_TAG}>", "\n"),
                language=rule_for(lang).name, words=config.summary_words, title=article.title,
                text=article.text[: config.source_chars]),
                partial(parse_summary, lang=lang, max_words=config.summary_words, primed=self.primed(f"<{SUMMARY_TAG}>")))
        return batch.run(self.client, self.generator, self.ledger)

    def facts(self, summaries: dict[str, Step]) -> dict[str, Step]:
        batch, config, pivot = Batch("simple_qa"), self.config, self.config.pivot
        blocked = {key: step.block("simple_qa", key, pivot) for key, step in summaries.items() if not step.ok}
        for key, step in summaries.items():
            if step.ok:
                batch.add(key, pivot, prompt_request(
                    self.spec, SIMPLE_QA_TEMPLATE, max_tokens=config.simple_qa_max_tokens, stop=("\n\n", "\nSummary:"),
                    language=rule_for(pivot).name, count=config.simple_qa_per_summary, summary=step.value),
                    partial(parse_qa_pairs, primed=self.primed(PRIMED_QUESTION), limit=config.simple_qa_per_summary))
        return blocked | batch.run(self.client, self.generator, self.ledger)

    def questions(self, related: list[Pair], facts: dict[str, Step]) -> dict[str, Step]:
        batch, config, pivot, blocked = Batch("question"), self.config, self.config.pivot, {}
        for pair in related:
            failed = next((facts[key] for key in pair.keys if not facts[key].ok), None)
            for qtype in config.question_types:
                key = f"{pair.pair_id}:{qtype}"
                if failed is not None:
                    blocked[key] = failed.block("question", key, pivot)
                    continue
                facts_a, facts_b = (facts[k].value for k in pair.keys)
                batch.add(key, pivot, prompt_request(
                    self.spec, QUESTION_TEMPLATES[qtype], max_tokens=config.question_max_tokens,
                    stop=("\n\n", "\nArticle A:"), count=config.questions_per_type, words=config.question_words,
                    title_a=self.articles[pair.a].title, facts_a=facts_a, title_b=self.articles[pair.b].title,
                    facts_b=facts_b),
                    partial(parse_typed_questions, facts_a=len(facts_a), facts_b=len(facts_b),
                            limit=config.questions_per_type, max_words=config.question_words, lang=pivot,
                            primed=self.primed(PRIMED_USES)))
        return blocked | batch.run(self.client, self.generator, self.ledger)

    def answers(self, related: list[Pair], facts: dict[str, Step], questions: dict[str, Step]) -> dict[str, Step]:
        batch, config = Batch("answer"), self.config
        for pair in related:
            a, b = self.articles[pair.a], self.articles[pair.b]
            for qtype in config.question_types:
                step = questions[f"{pair.pair_id}:{qtype}"]
                for number, question in enumerate(step.value if step.ok else [], 1):
                    if question.problem is not None:
                        continue  # recorded as its item's parse failure; nothing to answer
                    used = used_facts(question, pair, facts)
                    batch.add(f"{step.key}:{number}", config.pivot, prompt_request(
                        self.spec, ANSWER_TEMPLATE, max_tokens=config.answer_max_tokens,
                        stop=(f"</{ANSWER_TAG}>", "\n"), language=rule_for(config.pivot).name,
                        question=question.question, facts=[(fact["question"], fact["answer"]) for fact in used],
                        title_a=a.title, date_a=a.date, text_a=a.text[: config.answer_chars],
                        title_b=b.title, date_b=b.date, text_b=b.text[: config.answer_chars]),
                        partial(parse_answer, primed=self.primed(f"<{ANSWER_TAG}>")))
        return batch.run(self.client, self.generator, self.ledger)


def _pairs(wh: Warehouse, benchmark: str) -> list[Pair]:
    unchecked = wh.scalar("SELECT count(*) FROM related_pairs WHERE benchmark = ? AND status = 'candidate'", [benchmark])
    if unchecked:
        raise BabelbenchError(
            f"benchmark {benchmark}: {unchecked} related pairs are unchecked; run the relatedness check first")
    rows = wh.query(
        "SELECT pair_id, lang_a, page_a, lang_b, page_b, status, reason FROM related_pairs"
        " WHERE benchmark = ? AND list_contains(?, status) ORDER BY pair_id", [benchmark, list(CARRIED)])
    return [Pair(pid, (la, pa), (lb, pb), status, reason) for pid, la, pa, lb, pb, status, reason in rows]


def generate_questions(
    wh: Warehouse, client: LLMClient, benchmark: str, generator: str, config: XragConfig, fp: str,
    budget: Budget | BudgetLedger | None = None,
) -> StageOutput:
    """Run the four steps over the benchmark's related pairs; replace its ``qa_steps`` and XRAG ``qa_items``."""
    pairs = _pairs(wh, benchmark)
    related = [pair for pair in pairs if pair.status == "related"]
    chain = _Chain(client, generator, client.registry.get(generator), config,
                   article_texts(wh, {doc for pair in pairs for doc in (pair.a, pair.b)}),
                   BudgetLedger.of(budget))
    summaries = chain.summaries(related)
    facts = chain.facts(summaries)
    questions = chain.questions(related, facts)
    answers = chain.answers(related, facts, questions)
    items = item_rows(benchmark, generator, fp, config.pivot, config.question_types, pairs, chain.articles, facts,
                      questions, answers, config.window)
    steps = [[benchmark, s.step, s.key, s.lang, s.output, s.parsed_json(), s.status, s.reason, s.request_hash, fp]
             for group in (summaries, facts, questions, answers) for s in group.values()]
    with wh.transaction() as cur:  # steps and items replaced together: a killed run leaves the old ones
        cur.execute("DELETE FROM qa_steps WHERE benchmark = ?", [benchmark])
        cur.execute("DELETE FROM qa_items WHERE benchmark = ? AND recipe = ?", [benchmark, RECIPE])
        if steps:
            cur.executemany("INSERT INTO qa_steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", steps)
        insert_records(cur, "qa_items", items)
    counts = Counter(item.status for item in items)
    log.info("%s: %d XRAG items %s", benchmark, len(items), dict(counts))
    return StageOutput(rows=len(items),
                       message=f"{len(items)} items over {len(pairs)} pairs: {dict(sorted(counts.items()))}")
