"""The released XRAG files (``xrag.dev.jsonl``, ``xrag.test.jsonl``) as an XRAG benchmark.

Each line is one question with the articles shown with it.  The release mixes both settings: a line's
``setting`` field, else the articles' languages decide (:func:`setting_of`: an article in the question's
language makes it multilingual retrieval).  A monolingual-retrieval line also gives the English baseline
instance, made once per English question however many languages' lines repeat it (:func:`english_key`).
Every line is checked before the benchmark is written, in one transaction.

See ``docs/xrag.md``, "Importing the released test set".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.imports.common import DatasetLayout, chosen_langs, langs_text, write_benchmark
from tasks.json_lines import read_json_lines
from tasks.stage import StageOutput
from tasks.text.language_id import detect_language, lingua_code, lingua_supports
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord, ItemRecord

QUESTION_TYPES = frozenset({"aggregation", "comparison", "multihop", "set"})
TEXT_FIELDS = ("question", "answer", "language")
#: the leading characters of an article that decide its language
DETECT_CHARS = 600

RECIPE = "xrag"


def read_xrag(path: Path) -> list[dict[str, Any]]:
    """Every line, checked (see the module notes); ids unique."""
    rows, seen = [], set()
    for number, record in read_json_lines(path, "question"):
        where = f"{path} line {number}"
        identifier = record.get("id")
        if isinstance(identifier, bool) or not isinstance(identifier, (str, int)) or not str(identifier).strip():
            raise ConfigError(f"{where}: id must be a string or an integer, got {identifier!r}")
        record["id"] = str(identifier)
        if record["id"] in seen:
            raise ConfigError(f"{where}: id {record['id']} appears twice")
        seen.add(record["id"])
        for key in TEXT_FIELDS:
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise ConfigError(f"{where}: {key} must be a non-empty string, got {record.get(key)!r}")
        if record.get("q_type") not in QUESTION_TYPES:
            raise ConfigError(f"{where}: q_type {record.get('q_type')!r} is not one of {', '.join(sorted(QUESTION_TYPES))}")
        articles = record.get("articles")
        if not isinstance(articles, list) or not articles or not all(isinstance(a, str) for a in articles):
            raise ConfigError(f"{where}: articles must be a non-empty list of strings")
        support = record.get("is_support", [1, 1] + [0] * (len(articles) - 2))
        if not isinstance(support, list) or len(support) != len(articles) or not set(support) <= {0, 1}:
            raise ConfigError(f"{where}: is_support must be a 0/1 list as long as articles")
        record["is_support"] = support
        order = record.get("article_order")
        # used only when it is a permutation of the articles' positions (the release does not document the field)
        record["article_order"] = order if isinstance(order, list) and sorted(order) == list(range(len(articles))) \
            else None
        rows.append(record)
    if not rows:
        raise ConfigError(f"{path}: no questions")
    return rows


def setting_of(record: dict[str, Any]) -> str:
    """The line's XRAG setting: its own field, else the articles' languages (see the module notes)."""
    given = str(record.get("setting") or "")
    if given:
        return "multilingual_retrieval" if "multi" in given else "monolingual_retrieval"
    lang = record["language"]
    if lang != "en" and lingua_supports(lang):
        if any(detect_language(article[:DETECT_CHARS], lang) == lingua_code(lang) for article in record["articles"]):
            return "multilingual_retrieval"
    return "monolingual_retrieval"


def documents_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The articles as instance documents, in the order they are shown."""
    urls, dates = record.get("urls") or [], record.get("dates") or []
    documents = [{"doc_id": f"{record['id']}-{n}", "lang": None, "page_id": None, "title": "",
                  "url": urls[n] if n < len(urls) else None, "date": dates[n] if n < len(dates) else None,
                  "text": text, "role": "support" if record["is_support"][n] else "distractor"}
                 for n, text in enumerate(record["articles"])]
    order = record.get("article_order")
    return [documents[n] for n in order] if order is not None else documents


def write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """Every question of the chosen languages in its setting (see the module notes)."""
    records = read_xrag(source)
    # (record, its setting, what it asks: (language, question, answer) in its language and, for monolingual
    # retrieval, in English): English is available only where a line asks it
    line_settings = [setting_of(record) for record in records]
    questions = [(record, setting, asks(record, setting)) for record, setting in zip(records, line_settings, strict=True)]
    available = sorted({lang for _, _, asked in questions for lang, _, _ in asked})
    chosen = chosen_langs(available, langs, source)
    instances: list[list[Any]] = []
    items: list[list[Any]] = []
    settings: dict[str, int] = {}
    english: set[tuple[str, ...]] = set()  # the English instances made so far (see english_key)
    repeated = 0
    for record, setting, asked in questions:
        documents = json.dumps(documents_of(record), ensure_ascii=False)
        kept = []
        for lang, question, answer in asked:
            if lang not in chosen:
                continue
            if lang == "en":
                key = english_key(setting, question, answer, record)
                if key in english:
                    repeated += 1
                    continue
                english.add(key)
            kept.append((lang, question, answer))
        asked = kept
        if not asked:
            continue
        settings[setting] = settings.get(setting, 0) + 1
        for lang, question, answer in asked:
            instances.append(InstanceRecord(name, f"{record['id']}|{setting}|{lang}", record["id"], RECIPE, setting,
                                            lang, question, answer, record["language"], documents, 0, fp))
        items.append(ItemRecord(name, record["id"], RECIPE, record["language"], f"import:{source.name}", fp,
                                question=record["question"], answer=record["answer"], qtype=record["q_type"]))
    created = write_benchmark(wh, name, RECIPE, source, fp, instances, items)
    per_setting = ", ".join(f"{count} {setting}" for setting, count in sorted(settings.items()))
    shared = f"; {repeated} repeated English question(s) made once" if repeated else ""
    return StageOutput(rows=len(instances), message=f"{len(items)} questions ({per_setting}), {len(instances)} instances"
                                                    f" in {langs_text(created, chosen)}{shared}")


def asks(record: dict[str, Any], setting: str) -> list[tuple[str, str, str]]:
    """(language, question, answer) of each instance a line gives: its own, and for monolingual retrieval the
    English version when the line has one (see the module notes)."""
    asked = [(record["language"], record["question"], record["answer"])]
    if setting == "monolingual_retrieval" and record.get("en_question") and record.get("en_answer"):
        asked.append(("en", record["en_question"], record["en_answer"]))
    return asked


def english_key(setting: str, question: str, answer: str, record: dict[str, Any]) -> tuple[str, ...]:
    """What makes an English instance itself: its setting, question, answer and articles (as a set with their
    roles: the lines of one question may list them in different orders)."""
    articles = sorted(zip(record["articles"], map(str, record["is_support"]), strict=True))
    return setting, question, answer, *(part for article in articles for part in article)


IMPORTER = DatasetLayout(RECIPE, write, default_name="xrag")
