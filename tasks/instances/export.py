"""Instances as JSON Lines: one file per setting and question language.

Layout: ``<out>/<benchmark>/<setting>.<lang>.jsonl``; each line holds
``instance_id, item_id, setting, lang, question, answer, source_lang,
prompt_hint, judge_context, documents``.  The benchmark's directory is written
whole into a temporary sibling and swapped in, so a reader never sees a mix of
two builds.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

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
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=f".{benchmark}."))
    try:
        for name, lines in files.items():
            (staging / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp's 0700 would hide the export from other readers
        target, previous = out / benchmark, out / f".{benchmark}.previous"
        shutil.rmtree(previous, ignore_errors=True)
        if target.exists():
            os.replace(target, previous)
        os.replace(staging, target)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {name: len(lines) for name, lines in files.items()}
