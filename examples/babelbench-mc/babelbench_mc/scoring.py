"""Exact option match: an answer is right when it gives the right letter, or the right title, and nothing else first.

Accuracy per setting and language, and over a setting's languages, with a
bootstrap interval over questions (babelbench's).  A failed response is
wrong, and counted.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from tasks.metrics.bootstrap import bootstrap_ci
from tasks.metrics.leaderboard import ScoringConfig
from tasks.metrics.score import ALL, Score, Tally
from tasks.metrics.windows import Question
from tasks.warehouse.db import Warehouse

_LETTER = re.compile(r"^\W*([ABCD])(?![A-Za-z])")


def chosen(answer: str, options: list[str]) -> str | None:
    """The letter an answer picks: its leading letter, or the option it names exactly; None for anything else."""
    text = answer.strip()
    match = _LETTER.match(text)
    if match:
        return match.group(1)
    named = [n for n, option in enumerate(options) if text.rstrip(".").casefold() == option.casefold()]
    return "ABCD"[named[0]] if named else None


def _results(wh: Warehouse, benchmark: str, model: str) -> list[dict]:
    rows = wh.query_dicts(
        "SELECT i.item_id, i.setting, i.lang, i.answer AS gold, i.extra, r.status, r.answer FROM responses r"
        " JOIN instances i USING (benchmark, instance_id) WHERE r.benchmark = ? AND r.model = ? ORDER BY ALL",
        [benchmark, model])
    for row in rows:
        options = json.loads(row["extra"])["options"]
        row["right"] = row["status"] == "ok" and chosen(row["answer"] or "", options) == row["gold"]
    return rows


def score(wh: Warehouse, benchmark: str, model: str, judges: list[str],
          config: ScoringConfig) -> tuple[list[Score], str]:
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in _results(wh, benchmark, model):
        cells[(row["setting"], row["lang"])].append(row)
        cells[(row["setting"], ALL)].append(row)
    scores = []
    for (setting, lang), rows in sorted(cells.items()):
        value, low, high = bootstrap_ci([100.0 * r["right"] for r in rows], n_resamples=config.resamples,
                                        seed=config.seed)
        tally = Tally.of((r["status"] == "ok", False) for r in rows)
        scores.append(Score(setting, lang, ALL, "accuracy", value, low, high, len(rows)).counted(tally))
    return scores, ""


def window_questions(wh: Warehouse, benchmark: str, model: str, judges: list[str], config: ScoringConfig,
                     windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
    """Per setting, over its languages: each question right (1 of 1) or not, with its window."""
    by_setting: dict[tuple[str, str], list[Question]] = defaultdict(list)
    for row in _results(wh, benchmark, model):
        by_setting[(row["setting"], ALL)].append(
            Question(f"{row['item_id']}|{row['lang']}", windows.get(row["item_id"], "unknown"), int(row["right"]), 1))
    return dict(by_setting)
