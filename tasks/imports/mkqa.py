"""MKQA as a benchmark: one closed-book instance per example and language, with its gold answers.

The file is read and checked whole before anything is written, and written in
one transaction: a bad line is an error naming the file and line, and the
warehouse never holds half an import.  Gold answers keep their type, entity
and aliases (``instances.gold``), which scoring needs; ``answer`` holds the
first answer text for display.  Locales stay MKQA's (``zh_cn``, ``no`` …):
they decide how answers are normalised.  No ``qa_items`` rows are written:
those carry the quality control of generated items, which a published,
human-made dataset does not go through.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tasks.errors import ConfigError
from tasks.imports.common import DatasetLayout, chosen_langs, langs_text, write_benchmark
from tasks.metrics.mkqa_data import GoldExample, read_gold
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord

SETTING = "closed_book"

RECIPE = "mkqa"


def available_langs(examples: list[GoldExample]) -> list[str]:
    """The locales every example has a query and answers in."""
    common = set.intersection(*({lang for lang in e.queries if lang in e.answers} for e in examples))
    return sorted(common)


def write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """One closed-book instance per example and chosen locale (see the module notes)."""
    examples = read_gold(source)
    if not examples:
        raise ConfigError(f"{source}: no examples")
    chosen = chosen_langs(available_langs(examples), langs, source, "not every example has it")
    instances = []
    for example in examples:
        for lang in chosen:
            gold = msgspec.json.encode(example.answers[lang]).decode()
            instances.append(InstanceRecord(
                name, f"{example.example_id}|{SETTING}|{lang}", example.example_id, RECIPE, SETTING, lang,
                example.queries[lang], _display(example, lang), "en", "[]", 0, fp, gold=gold))
    created = write_benchmark(wh, name, RECIPE, source, fp, instances)
    return StageOutput(rows=len(instances), message=f"{len(examples)} examples x {len(created)} locales "
                                                    f"({langs_text(created, chosen)}) from {source.name}")


def _display(example: GoldExample, lang: str) -> str:
    """The first answer text of a locale, '' when the example has none (long_answer, unanswerable)."""
    return next((answer.text for answer in example.answers.get(lang, ()) if answer.text), "")


IMPORTER = DatasetLayout(RECIPE, write, default_name="mkqa")
