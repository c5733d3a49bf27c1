"""The released ECLeKTic file (``eclektic_main.jsonl``) as an ECLEKTIC benchmark.

Each line is one question written from a Wikipedia article that exists in
one language only: ``q_id``, ``original_lang``, ``title``, ``url``,
``content`` (the article's opening, the source context), ``question`` and
``answer`` in the source language, and for every language ``L`` of the
release its translations ``L_q``, ``L_a`` and ``L_c`` (question, answer,
context).  It becomes the instances a built ECLEKTIC benchmark has — the
closed book in the source language and in every target, the three hint
ablations and the open book with the source context — made by the same code
(:func:`tasks.instances.build.eclektic_instances`), with the file's own
translations in place of the gated ones; the judge reads ``L_c``.  One
``qa_items`` row per question keeps its source context, as built items do.

Every line is checked before anything is written (a bad one is named with
its file and line), and the benchmark is written in one transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.imports.common import DatasetLayout, chosen_langs, langs_text, write_benchmark
from tasks.instances.build import eclektic_instances, instance_record
from tasks.json_lines import read_json_lines
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import ItemRecord

REQUIRED = ("q_id", "original_lang", "title", "content", "question", "answer")
_TRANSLATED = re.compile(r"^([a-z]{2,3}(?:[_-][A-Za-z]+)?)_q$")
_FIELDS = {"question": "q", "answer": "a", "context": "c"}

RECIPE = "eclektic"


def read_eclektic(path: Path) -> list[dict[str, Any]]:
    """Every line, checked: the required keys are non-empty strings (``q_id`` a string or integer), ids unique."""
    rows, seen = [], set()
    for number, record in read_json_lines(path, "question"):
        where = f"{path} line {number}"
        for key in REQUIRED:
            value = record.get(key)
            if key == "q_id" and isinstance(value, int) and not isinstance(value, bool):
                record[key] = value = str(value)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
        if record["q_id"] in seen:
            raise ConfigError(f"{where}: q_id {record['q_id']} appears twice")
        seen.add(record["q_id"])
        for lang in translation_langs(record):
            for suffix in _FIELDS.values():
                value = record.get(f"{lang}_{suffix}")
                if value is not None and not isinstance(value, str):
                    raise ConfigError(f"{where}: {lang}_{suffix} must be a string, got {value!r}")
        rows.append(record)
    if not rows:
        raise ConfigError(f"{path}: no questions")
    return rows


def translation_langs(record: dict[str, Any]) -> list[str]:
    """The languages a line carries a question in (its ``L_q`` keys)."""
    return sorted(match.group(1) for key in record if (match := _TRANSLATED.match(key)))


def write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """Every question whose source language is chosen, in the chosen languages (see the module notes)."""
    records = read_eclektic(source)
    available = sorted({lang for r in records for lang in translation_langs(r)} | {r["original_lang"] for r in records})
    chosen = chosen_langs(available, langs, source)
    by_id = {record["q_id"]: record for record in records}

    def translated(item_id: str, lang: str, fields: Iterable[str]) -> dict[str, str] | None:
        texts = {field: by_id[item_id].get(f"{lang}_{_FIELDS[field]}") for field in fields}
        return texts if all(isinstance(text, str) and text.strip() for text in texts.values()) else None

    instances: list[list[Any]] = []
    items: list[list[Any]] = []
    issues: list[dict[str, Any]] = []
    outside = 0
    for record in records:
        source_lang = record["original_lang"]
        if source_lang not in chosen:
            outside += 1
            continue
        documents = [{"lang": source_lang, "page_id": None, "title": record["title"], "url": record.get("url")}]
        item = {"item_id": record["q_id"], "lang": source_lang, "question": record["question"],
                "answer": record["answer"], "context": record["content"], "documents": documents}
        instances += [instance_record(name, RECIPE, record["q_id"], source_lang, instance, 0, fp)
                      for instance in eclektic_instances(item, chosen, translated, issues)]
        items.append(ItemRecord(name, record["q_id"], RECIPE, source_lang, f"import:{source.name}", fp,
                                question=record["question"], answer=record["answer"], context=record["content"],
                                documents=json.dumps(documents, ensure_ascii=False)))
    created = write_benchmark(wh, name, RECIPE, source, fp, instances, items)
    notes = [f"{outside} questions from languages not chosen left out"] if outside else []
    if issues:
        notes.append(f"{len(issues)} translations missing")
    return StageOutput(rows=len(instances), issues=issues,
                       message=f"{len(items)} questions, {len(instances)} instances in {langs_text(created, chosen)}"
                               + (f" ({'; '.join(notes)})" if notes else ""))


IMPORTER = DatasetLayout(RECIPE, write, default_name="eclektic")
