"""From the XRAG chain's step outcomes to ``qa_items`` rows: every question slot recorded, none dropped.

A slot is (pair, question type).  It yields one item per question the model
wrote (``<pair_id>:<qtype>:<n>``), or, when none could be written — the
pair's relatedness check failed, or a step before the questions did — one
item ``…:1`` with that failure's status and reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tasks.qa.window import Window, window_columns
from tasks.qa.xrag_articles import ArticleText
from tasks.qa.xrag_questions import TypedQuestion
from tasks.qa.xrag_steps import Step
from tasks.warehouse.records import ItemRecord

#: the recipe these items are of
RECIPE = "xrag"


@dataclass(frozen=True)
class Pair:
    """A related pair as the chain reads it: A is the pivot article."""

    pair_id: str
    a: tuple[str, int]
    b: tuple[str, int]
    status: str
    reason: str | None

    @property
    def keys(self) -> tuple[str, str]:
        """The summary / simple-QA keys of its two articles."""
        return f"{self.a[0]}:{self.a[1]}", f"{self.b[0]}:{self.b[1]}"


@dataclass(frozen=True)
class _Item:
    number: int
    status: str
    reason: str | None
    question: str | None = None
    answer: str | None = None
    used: list[dict[str, Any]] | None = None
    request_hash: str | None = None  # the last call made for the item


def used_facts(question: TypedQuestion, pair: Pair, facts: dict[str, Step]) -> list[dict[str, Any]]:
    """The simple pairs a question names, each with the article it comes from."""
    docs = {"A": pair.a, "B": pair.b}
    used = []
    for side, number in question.uses:
        lang, page_id = docs[side]
        fact_question, fact_answer = facts[f"{lang}:{page_id}"].value[number - 1]
        used.append({"ref": f"{side}{number}", "lang": lang, "page_id": page_id,
                     "question": fact_question, "answer": fact_answer})
    return used


def _slot_items(pair: Pair, key: str, facts: dict[str, Step], questions: dict[str, Step],
                answers: dict[str, Step]) -> list[_Item]:
    if pair.status != "related":
        return [_Item(1, pair.status, f"relatedness check {pair.pair_id}: {pair.reason}")]
    step = questions[key]
    if not step.ok:
        return [_Item(1, step.status, step.cause, request_hash=step.request_hash)]
    items = []
    for number, question in enumerate(step.value, 1):
        if question.problem is not None:
            items.append(_Item(number, "parse_failed", question.problem, question.question, request_hash=step.request_hash))
            continue
        answer = answers[f"{key}:{number}"]
        items.append(_Item(number, answer.status, None if answer.ok else answer.cause, question.question, answer.value,
                           used_facts(question, pair, facts), answer.request_hash))
    return items


def item_rows(
    benchmark: str, generator: str, fp: str, lang: str, qtypes: Sequence[str], pairs: Sequence[Pair],
    articles: dict[tuple[str, int], ArticleText], facts: dict[str, Step], questions: dict[str, Step],
    answers: dict[str, Step], window: Window | None = None,
) -> list[ItemRecord]:
    """The items of every pair and question type; ``lang`` is the pivot."""
    rows = []
    for pair in pairs:
        documents = json.dumps([{"lang": doc_lang, "page_id": page_id, "title": articles[(doc_lang, page_id)].title}
                                for doc_lang, page_id in (pair.a, pair.b)], ensure_ascii=False)
        for qtype in qtypes:
            key = f"{pair.pair_id}:{qtype}"
            for item in _slot_items(pair, key, facts, questions, answers):
                used = json.dumps(item.used, ensure_ascii=False) if item.used is not None else None
                since, until = window_columns(window)
                rows.append(ItemRecord(benchmark, f"{key}:{item.number}", RECIPE, lang, generator, fp,
                                       question=item.question, answer=item.answer, qtype=qtype, documents=documents,
                                       used_pairs=used, status=item.status, reason=item.reason,
                                       request_hash=item.request_hash, window_since=since, window_until=until))
    return rows
