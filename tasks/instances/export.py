"""Instances as JSON Lines: one file per setting and question language.

Layout: ``<out>/<benchmark>/<setting>.<lang>.jsonl``; each line holds
``instance_id, item_id, setting, lang, question, answer, source_lang,
prompt_hint, judge_context, documents``.  The benchmark's directory is written
whole into a temporary sibling and swapped in, so a reader never sees a mix of
two builds.
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks.warehouse.atomic import atomic_folder
from tasks.warehouse.db import Warehouse

COLUMNS = ("instance_id", "item_id", "setting", "lang", "question", "answer", "source_lang", "prompt_hint",
           "judge_context", "documents")


def export_instances(wh: Warehouse, benchmark: str, out: Path) -> dict[str, int]:
    """Write the benchmark's instances under ``out``; returns lines written per file name."""
    rows = wh.query(
        f"SELECT {', '.join(COLUMNS)} FROM instances WHERE benchmark = ? ORDER BY setting, lang, instance_id", [benchmark]
    )
    files: dict[str, list[str]] = {}
    for row in rows:
        record = dict(zip(COLUMNS, row))
        for field in ("prompt_hint", "documents"):
            record[field] = json.loads(record[field]) if record[field] else None
        files.setdefault(f"{record['setting']}.{record['lang']}.jsonl", []).append(json.dumps(record, ensure_ascii=False))
    with atomic_folder(out / benchmark) as staging:
        for name, lines in files.items():
            (staging / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {name: len(lines) for name, lines in files.items()}
