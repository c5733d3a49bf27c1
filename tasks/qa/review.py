"""Human review of QA items: export a sheet, import the decisions made on it.

The sheet (CSV for spreadsheets, JSON Lines for tools; chosen by the file's
suffix) lists each generated item with what the machine checks said and four
columns to fill: ``decision`` (accept | reject, empty = not reviewed yet),
``corrected_answer``, ``reviewer`` and ``note``.  An import is all or
nothing: a file with any bad row is refused with every problem listed by line,
because half an import is hard to notice and harder to undo.

Several people may review one benchmark, each on their own copy of the sheet
(often under the same file name): an import replaces only the decisions its
own reviewers brought from a file of that name before, never another
reviewer's.  How the decisions of several people combine (one reject
rejects) is the ``qa_status`` view's rule.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines
from tasks.warehouse.atomic import atomic_write_text
from tasks.warehouse.db import Warehouse

SHEET_COLUMNS = ("benchmark", "item_id", "lang", "qtype", "question", "answer", "documents", "qc_status", "failed_checks",
                 "unsure_checks")
DECISION_COLUMNS = ("decision", "corrected_answer", "reviewer", "note")
DECISIONS = {"accept": "pass", "reject": "fail"}
MAX_LISTED_PROBLEMS = 20


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise ConfigError(f"{path}: a review sheet is .csv or .jsonl, not {suffix or 'a file without suffix'}")
    return suffix


def export_sheet(wh: Warehouse, benchmark: str, path: Path, *, only_flagged: bool = False) -> int:
    """Write the review sheet of ``benchmark``'s generated items; returns how many rows it has.

    ``only_flagged`` keeps the items no machine vouches for: a check failed, or could not run.
    """
    kind = _format(path)
    where = " AND qc_status IN ('flagged', 'unchecked')" if only_flagged else ""
    rows = wh.query(
        "SELECT benchmark, item_id, lang, qtype, question, answer,"
        " array_to_string(list_transform(CAST(documents AS JSON[]), lambda d: (d->>'lang') || ':' || (d->>'title')), ' | '),"
        f" qc_status, array_to_string(failed_checks, '; '), array_to_string(unsure_checks, '; ') FROM qa_status WHERE benchmark = ? AND status = 'ok'{where}"
        " ORDER BY item_id",
        [benchmark],
    )
    if not rows and not wh.scalar("SELECT count(*) FROM qa_items WHERE benchmark = ?", [benchmark]):
        raise ConfigError(f"no QA items for benchmark {benchmark!r}; run `babelbench qa build` first")
    records = [dict(zip(SHEET_COLUMNS, row)) | dict.fromkeys(DECISION_COLUMNS, "") for row in rows]
    if kind == ".csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=SHEET_COLUMNS + DECISION_COLUMNS)
        writer.writeheader()
        writer.writerows(records)
        text = buffer.getvalue()
    else:
        text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    atomic_write_text(path, text)
    return len(records)


def _read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every row of a sheet."""
    if _format(path) == ".jsonl":
        return read_json_lines(path, "review row")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the review file ({exc.strerror})") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = {"item_id", "decision"} - set(reader.fieldnames or ())
    if missing:
        raise ConfigError(f"{path}: the header lacks {sorted(missing)}")
    return [(reader.line_num, row) for row in reader]


def import_decisions(wh: Warehouse, benchmark: str, path: Path, *, reviewer: str | None = None) -> int:
    """Store the decisions of a filled sheet as ``human:<reviewer>`` reviews; returns how many were stored.

    A row's own ``reviewer`` column wins over ``reviewer``; a decision with
    neither is refused, since every decision must say who made it.
    """
    known = {row[0] for row in wh.query("SELECT item_id FROM qa_items WHERE benchmark = ?", [benchmark])}
    problems: list[str] = []
    decided: list[list[Any]] = []
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    for number, record in _read_records(path):
        decision = str(record.get("decision") or "").strip().lower()
        if not decision:
            continue  # not reviewed yet
        where = f"line {number}"
        item_id = str(record.get("item_id") or "").strip()
        row_benchmark = str(record.get("benchmark") or benchmark).strip()
        who = str(record.get("reviewer") or reviewer or "").strip()
        if row_benchmark != benchmark:
            problems.append(f"{where}: benchmark {row_benchmark!r}, importing into {benchmark!r}")
        elif item_id not in known:
            problems.append(f"{where}: no item {item_id!r} in benchmark {benchmark!r}")
        if decision not in DECISIONS:
            problems.append(f"{where}: decision {decision!r} is not one of {sorted(DECISIONS)}")
        if not who:
            problems.append(f"{where}: no reviewer (fill the column or pass --reviewer)")
        corrected = str(record.get("corrected_answer") or "").strip() or None
        note = str(record.get("note") or "").strip() or None
        decided.append([benchmark, item_id, "overall", DECISIONS.get(decision, "unsure"), f"human:{who}", corrected,
                        note, path.name, None, now])
    if problems:
        listed = "\n  ".join(problems[:MAX_LISTED_PROBLEMS])
        more = f"\n  … and {len(problems) - MAX_LISTED_PROBLEMS} more" if len(problems) > MAX_LISTED_PROBLEMS else ""
        raise ConfigError(f"{path}: {len(problems)} problem(s); nothing was imported:\n  {listed}{more}")
    reviewers = sorted({row[4] for row in decided})
    with wh.transaction() as cur:
        cur.execute("DELETE FROM qa_reviews WHERE benchmark = ? AND source = ? AND list_contains(?, reviewer)",
                    [benchmark, path.name, reviewers])
        if decided:
            cur.executemany("INSERT INTO qa_reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", decided)
    return len(decided)
