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

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from tasks.errors import ConfigError
from tasks.metrics.mkqa_data import GoldExample, read_gold
from tasks.stage import ReadFields, Stage, StageOutput, StageRef, run_stage
from tasks.warehouse.db import Warehouse

IMPORT = Stage("import", 1)
SETTING = "closed_book"


def file_digest(path: Path) -> str:
    """sha256 of a file, for the import's fingerprint: the same file imported again is a cache hit."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def available_langs(examples: list[GoldExample]) -> list[str]:
    """The locales every example has a query and answers in."""
    common = set.intersection(*({lang for lang in e.queries if lang in e.answers} for e in examples))
    return sorted(common)


def import_mkqa(wh: Warehouse, source: Path, name: str, langs: list[str] | None, *, force: bool = False,
                run_id: str | None = None) -> StageRef:
    """Read ``source`` (``mkqa.jsonl.gz`` or ``.jsonl``) into benchmark ``name``; ``langs`` default to all it has."""
    if not source.is_file():
        raise ConfigError(f"{source}: no such MKQA file")
    read = ReadFields(values={"recipe": "mkqa", "source": file_digest(source), "langs": sorted(langs) if langs else None})
    return run_stage(wh, IMPORT, name, read, {}, lambda fp: _write(wh, source, name, langs, fp), force=force,
                     run_id=run_id)


def _write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    examples = read_gold(source)
    if not examples:
        raise ConfigError(f"{source}: no examples")
    have = available_langs(examples)
    chosen = sorted(langs) if langs else have
    missing = sorted(set(chosen) - set(have))
    if missing:
        raise ConfigError(f"{source}: not every example has {', '.join(missing)} (every example has: {', '.join(have)})")
    instances = []
    for example in examples:
        for lang in chosen:
            gold = json.dumps([asdict(answer) for answer in example.answers[lang]], ensure_ascii=False)
            instances.append([name, f"{example.example_id}|{SETTING}|{lang}", example.example_id, "mkqa", SETTING, lang,
                              example.queries[lang], _display(example, lang), "en", None, None, "[]", 0, fp, gold])
    with wh.transaction() as cur:
        cur.execute("INSERT OR REPLACE INTO qa_benchmarks VALUES (?, 'mkqa', ?, ?, ?, now())",
                    [name, chosen, f"import:{source.name}", json.dumps({"source": str(source), "fingerprint": fp})])
        cur.execute("DELETE FROM instances WHERE benchmark = ?", [name])
        cur.executemany("INSERT INTO instances VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", instances)
    return StageOutput(rows=len(instances), message=f"{len(examples)} examples x {len(chosen)} locales "
                                                    f"({', '.join(chosen)}) from {source.name}")


def _display(example: GoldExample, lang: str) -> str:
    """The first answer text of a locale, '' when the example has none (long_answer, unanswerable)."""
    return next((answer.text for answer in example.answers.get(lang, ()) if answer.text), "")
