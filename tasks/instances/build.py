"""Benchmark instances: each accepted question, in each language it passed translation into, per setting.

An instance is everything a model is shown (question, documents in their presented order, a hint) plus
what scoring needs (gold answer, the judge's context).  Document order is shuffled by a seed from the
benchmark seed and the instance id, so it never changes when other instances come or go.  A question
enters a language only through translations that passed the gate, and an item short of kept distractors
for a retrieval setting is an issue, never built short.

See ``docs/qa-build.md``, "Instances and distractors".
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.qa.policy import accepted_items, benchmark_definition
from tasks.qa.xrag_articles import article_texts
from tasks.recipe import recipe as recipe_of
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord, insert_records

ECLEKTIC_HINTS = ("hint_general", "hint_source_lang", "hint_source_title")
#: XRAG retrieval settings: supporting documents per language role, distractors per language role.
RETRIEVAL_SHAPES: dict[str, dict[str, int]] = {
    "monolingual_retrieval": {"pivot": 6},
    "multilingual_retrieval": {"pivot": 3, "x": 3},
}


class InstanceConfig(BaseModel):
    """How instances are assembled from the accepted items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    qc_policy: Literal["prescreen", "human"] = Field(
        "prescreen",
        description=(
            "prescreen: an item a rule or the LLM pre-screen flagged, or whose checks could not run, stays out "
            "unless a person accepted it; "
            "human: only a person's rejection keeps an item out (the pre-screen is advisory)."
        ),
    )
    seed: int = Field(0, description="Seed of the document order (combined with each instance id).")
    doc_chars: int | None = Field(4000, ge=100, description="Characters of each document kept; None keeps whole articles.")


def instance_seed(seed: int, instance_id: str) -> int:
    return int(hashlib.sha256(f"{seed}:{instance_id}".encode()).hexdigest()[:12], 16)


def _shuffled(documents: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    order = list(documents)
    random.Random(seed).shuffle(order)
    return order


class Sources:
    """The warehouse rows a recipe's instances are made of, fetched once per benchmark: the translations that passed
    the gate, the kept distractors, and the text and date of every article shown."""

    def __init__(self, wh: Warehouse, benchmark: str, config: InstanceConfig, supporting: Iterable[tuple[str, int]]) -> None:
        self.translations: dict[tuple[str, str, str], str] = {
            (item, field, lang): text
            for item, field, lang, text in wh.query(
                "SELECT item_id, field, tgt_lang, text FROM translations WHERE benchmark = ? AND gate = 'pass'", [benchmark])
        }
        self.distractors: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
        for item, lang, page_id, title in wh.query(
            "SELECT item_id, lang, page_id, title FROM distractors WHERE benchmark = ? AND status = 'kept'"
            " ORDER BY item_id, lang, rank", [benchmark]):
            self.distractors[(item, lang)].append((page_id, title))
        shown = set(supporting) | {(lang, page_id) for (_, lang), kept in self.distractors.items() for page_id, _ in kept}
        articles = article_texts(wh, shown)
        self._texts = {key: article.text[: config.doc_chars] if config.doc_chars else article.text
                       for key, article in articles.items()}
        # XRAG shows each article with its date; a document without a timestamp shows none (never "date unknown")
        self._dates = {key: article.timestamp[:10] if article.timestamp else None for key, article in articles.items()}

    def text(self, lang: str, page_id: int) -> str:
        return self._texts[(lang, page_id)]

    def document(self, lang: str, page_id: int, title: str, role: str) -> dict[str, Any]:
        return {"lang": lang, "page_id": page_id, "title": title, "text": self.text(lang, page_id), "role": role,
                "date": self._dates[(lang, page_id)]}

    def translated(self, item_id: str, lang: str, fields: Iterable[str]) -> dict[str, str] | None:
        """The item's fields in ``lang`` when every one passed the gate, else None."""
        found = {field: self.translations.get((item_id, field, lang)) for field in fields}
        return None if any(value is None for value in found.values()) else found  # type: ignore[return-value]


def build_instances(wh: Warehouse, benchmark: str, config: InstanceConfig, fp: str) -> StageOutput:
    """Assemble and store every instance of ``benchmark`` by its recipe's rules; replaces its earlier instances."""
    recipe, langs = benchmark_definition(wh, benchmark)
    protocol = recipe_of(recipe)
    items = accepted_items(wh, benchmark, config.qc_policy)
    documents = {item_id: json.loads(docs) for item_id, _, _, _, _, docs in items}
    extras = dict(wh.query("SELECT item_id, extra FROM qa_items WHERE benchmark = ? AND extra IS NOT NULL", [benchmark]))
    supporting = [(d["lang"], d["page_id"]) for docs in documents.values() for d in docs if d.get("page_id") is not None]
    sources = Sources(wh, benchmark, config, supporting)
    records: list[InstanceRecord] = []
    issues: list[dict[str, Any]] = []
    for item_id, lang, question, answer, context, _ in items:
        item = {"item_id": item_id, "lang": lang, "question": question, "answer": answer, "context": context,
                "documents": documents[item_id], "extra": json.loads(extras[item_id]) if item_id in extras else None}
        records += [instance_record(benchmark, recipe, item_id, lang, instance, config.seed, fp)
                    for instance in protocol.instances(item, langs, sources, issues)]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM instances WHERE benchmark = ?", [benchmark])
        insert_records(cur, "instances", records)
    return StageOutput(rows=len(records), issues=issues,
                       message=f"{len(records)} instances from {len(items)} accepted items")


def instance_record(benchmark: str, recipe: str, item_id: str, source_lang: str, instance: dict[str, Any], seed: int,
                    fp: str) -> InstanceRecord:
    """One instance of a recipe's making as a record; documents are shuffled by the instance's own seed.  Structured
    gold answers come with imported benchmarks (MKQA); ``extra`` is the recipe's own data."""
    instance_id = f"{item_id}|{instance['setting']}|{instance['lang']}"
    own_seed = instance_seed(seed, instance_id)
    extra = instance.get("extra")
    return InstanceRecord(
        benchmark, instance_id, item_id, recipe, instance["setting"], instance["lang"], instance["question"],
        instance["answer"], source_lang, json.dumps(_shuffled(instance.get("documents", []), own_seed),
                                                    ensure_ascii=False), own_seed, fp,
        prompt_hint=json.dumps(instance.get("hint")) if instance.get("hint") else None,
        judge_context=instance.get("judge_context"),
        extra=json.dumps(extra, ensure_ascii=False) if extra is not None else None)


#: (item id, language, fields) → the item's fields in that language, or None when it has no (good) translation
Translated = Callable[[str, str, Iterable[str]], dict[str, str] | None]


def eclektic_instances(item: dict[str, Any], langs: list[str], translated: Translated,
                       issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Closed book in the source language and every target it was translated into, plus the hint ablations.

    Built benchmarks take the translations that passed the gate; an imported ECLEKTIC file brings its own.
    """
    source = item["lang"]
    [doc] = item["documents"]
    instances = [{"setting": "closed_book", "lang": source, "question": item["question"], "answer": item["answer"],
                  "judge_context": item["context"]}]
    source_context = {"lang": source, "page_id": doc["page_id"], "title": doc["title"], "text": item["context"],
                      "role": "support"}
    for target in langs:
        if target == source:
            continue
        texts = translated(item["item_id"], target, ("question", "answer", "context"))
        if texts is None:
            issues.append({"item": item["item_id"], "reason": f"not in {target}: a translation is missing or failed its gate"})
            continue
        base = {"lang": target, "question": texts["question"], "answer": texts["answer"],
                "judge_context": texts["context"]}
        instances.append(base | {"setting": "closed_book"})
        instances.append(base | {"setting": "hint_general", "hint": {"kind": "general"}})
        instances.append(base | {"setting": "hint_source_lang", "hint": {"kind": "source_lang", "source_lang": source}})
        instances.append(base | {"setting": "hint_source_title",
                                 "hint": {"kind": "source_title", "source_lang": source, "title": doc["title"]}})
        instances.append(base | {"setting": "open_book_source_context", "documents": [source_context]})
    return instances


def xrag_instances(item: dict[str, Any], langs: list[str], lookup: Sources,
                   issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Closed book and oracle in the pivot language; retrieval settings in the languages the pair allows."""
    pivot = item["lang"]
    support = [lookup.document(d["lang"], d["page_id"], d["title"], "support") for d in item["documents"]]
    english = {"lang": pivot, "question": item["question"], "answer": item["answer"]}
    instances = [english | {"setting": "closed_book"}]
    other = sorted({d["lang"] for d in item["documents"]} - {pivot})
    if not other:  # a pivot–pivot pair: oracle, and monolingual retrieval in the pivot and every X
        instances.append(english | {"setting": "oracle", "documents": support})
        setting, question_langs, roles = "monolingual_retrieval", [pivot] + [x for x in langs if x != pivot], {"pivot": pivot}
    else:  # a pivot–X pair: multilingual retrieval in X
        setting, question_langs, roles = "multilingual_retrieval", other, {"pivot": pivot, "x": other[0]}
    distractors = []
    for role, count in RETRIEVAL_SHAPES[setting].items():
        kept = lookup.distractors.get((item["item_id"], roles[role]), [])[:count]
        if len(kept) < count:
            issues.append({"item": item["item_id"], "reason": f"{setting}: {len(kept)} of {count} {roles[role]} distractors kept"})
            return instances
        distractors += [lookup.document(roles[role], page_id, title, "distractor") for page_id, title in kept]
    for lang in question_langs:
        if lang == pivot:
            texts = {"question": item["question"], "answer": item["answer"]}
        else:
            texts = lookup.translated(item["item_id"], lang, ("question", "answer"))
            if texts is None:
                issues.append({"item": item["item_id"], "reason": f"not in {lang}: a translation is missing or failed its gate"})
                continue
        instances.append({"setting": setting, "lang": lang, **texts, "documents": support + distractors})
    return instances
