"""What the translation and distractor stages work on, read from a benchmark's accepted items.

Only items the QC policy lets through are translated — translating what will
be rejected is paid work thrown away.  Which fields go, and into which
languages, is the recipe's (:attr:`~tasks.recipe.Recipe.item_fields`,
:meth:`~tasks.recipe.Recipe.translates_into`):

- ECLEKTIC: question, answer and context, from the source language into
  every other language of the benchmark (the judge reads the context in the
  question's language).
- XRAG: question and answer, from the pivot into each X; an item over a
  pivot–X pair only into its X, the one language its multilingual setting
  uses.
"""

from __future__ import annotations

import json

from tasks.distractors import DistractorQuery
from tasks.qa.policy import accepted_items, benchmark_definition
from tasks.recipe import recipe as recipe_of
from tasks.translate import TranslationUnit
from tasks.warehouse.db import Warehouse


def translation_units(wh: Warehouse, benchmark: str, tgt_lang: str, policy: str) -> list[TranslationUnit]:
    """The fields of the accepted items that ``tgt_lang`` needs, in item order."""
    recipe = recipe_of(benchmark_definition(wh, benchmark)[0])
    units = []
    for item_id, lang, question, answer, context, documents in accepted_items(wh, benchmark, policy):
        if not recipe.translates_into(lang, {d["lang"] for d in json.loads(documents)}, tgt_lang):
            continue
        values = {"question": question, "answer": answer, "context": context}
        units += [TranslationUnit(item_id=item_id, field=field, src_lang=lang, text=values[field])
                  for field in recipe.item_fields if values.get(field)]
    return units


def distractor_queries(wh: Warehouse, benchmark: str, policy: str) -> list[DistractorQuery]:
    """One query per accepted XRAG item: its question and answer in each document language it needs.

    A language whose translation did not pass the gate is searched with the
    pivot question (the item will not be built in that language, but its
    pivot-language instances still need distractors).
    """
    passed = {(item, field, lang): text for item, field, lang, text in wh.query(
        "SELECT item_id, field, tgt_lang, text FROM translations WHERE benchmark = ? AND gate = 'pass'", [benchmark])}
    windows = dict(wh.query("SELECT item_id, window_since FROM qa_items WHERE benchmark = ? AND window_since IS NOT NULL",
                            [benchmark]))
    queries = []
    for item_id, lang, question, answer, _, documents in accepted_items(wh, benchmark, policy):
        docs = json.loads(documents)
        doc_langs = tuple([lang] + sorted({d["lang"] for d in docs} - {lang}))
        queries.append(DistractorQuery(
            item_id=item_id,
            queries={x: passed.get((item_id, "question", x), question) for x in doc_langs},
            answers={x: passed.get((item_id, "answer", x), answer) for x in doc_langs},
            supporting=tuple((d["lang"], d["page_id"]) for d in docs),
            doc_langs=doc_langs,
            before=windows.get(item_id),
        ))
    return queries
