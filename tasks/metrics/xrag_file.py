"""XRAG accuracy from a file of judge verdicts made elsewhere (``babelbench score xrag``), by the protocol's rules.

Researchers who generate and judge answers outside babelbench bring one
line per (response, judge); the answers are scored exactly as the
leaderboard scores stored ones (:func:`tasks.metrics.xrag.xrag_scores`):
correct when a strict majority of the whole panel — every judge named
anywhere in the file — says yes and the answer is in the question's
language.  A judge without a line for a response, or with a null verdict,
leaves that response's panel incomplete; incomplete panels are counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines
from tasks.metrics.score import ALL
from tasks.metrics.xrag import PanelRow, xrag_scores

FIELDS = ("question_id", "lang", "setting", "model", "judge", "verdict", "language_ok")


def _read(path: Path) -> tuple[dict[tuple[str, str, str, str], dict[str, str | None]],
                                dict[tuple[str, str, str, str], bool | None]]:
    """Per response (model, setting, lang, question_id): each judge's verdict and whether its language matched;
    a bad line is an error naming the file, the line and what is wrong with it."""
    verdicts: dict[tuple[str, str, str, str], dict[str, str | None]] = {}
    language: dict[tuple[str, str, str, str], bool | None] = {}
    for number, record in read_json_lines(path, "judgement"):
        where = f"{path} line {number}"
        missing = [key for key in FIELDS if key not in record]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        if record["verdict"] not in ("yes", "no", None):
            raise ConfigError(f"{where}: verdict is {record['verdict']!r}, not \"yes\", \"no\" or null")
        if record["language_ok"] is not None and not isinstance(record["language_ok"], bool):
            raise ConfigError(f"{where}: language_ok is {record['language_ok']!r}, not true, false or null")
        key = (str(record["model"]), str(record["setting"]), str(record["lang"]), str(record["question_id"]))
        judge = str(record["judge"])
        given = verdicts.setdefault(key, {})
        if judge in given:
            raise ConfigError(f"{where}: a second verdict of judge {judge!r} on question {key[3]!r} ({key[2]},"
                              f" {key[1]}) of model {key[0]!r}")
        given[judge] = record["verdict"]
        checked, known = record["language_ok"], language.get(key)
        if None not in (checked, known) and checked != known:
            raise ConfigError(f"{where}: language_ok is {str(checked).lower()}, but {str(known).lower()} on an"
                              " earlier line of the same response")
        language[key] = known if checked is None else checked
    if not verdicts:
        raise ConfigError(f"{path}: no judgements")
    return verdicts, language


def score_xrag_file(path: Path, *, seed: int = 0, resamples: int = 1000) -> dict[str, Any]:
    """``{"models": {model: {setting: {lang: {"accuracy", "n", "ci_low", "ci_high"}}}}, "incomplete_panels": N}``.

    Accuracy is in percent with its question-clustered 95% interval (null when undefined: one question); the
    ``all`` language pools the non-English languages, English being the protocol's baseline (a setting asked
    only in English has no ``all``).  ``incomplete_panels`` counts the responses some judge of the panel gave
    no verdict on; they are correct only if the verdicts given still make a majority of the whole panel.
    """
    verdicts, language = _read(path)
    panel = sorted({judge for given in verdicts.values() for judge in given})
    rows = [PanelRow(question_id, setting, lang, None, tuple(given.get(judge) for judge in panel),
                     language[(model, setting, lang, question_id)])
            for (model, setting, lang, question_id), given in verdicts.items()]
    models: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for model in sorted({key[0] for key in verdicts}):
        for score in xrag_scores([row for row, key in zip(rows, verdicts, strict=True) if key[0] == model],
                                 seed=seed, resamples=resamples):
            if score.metric == "accuracy" and score.subset == ALL:
                models.setdefault(model, {}).setdefault(score.setting, {})[score.lang] = {
                    "accuracy": score.value, "n": score.n, "ci_low": score.ci_low, "ci_high": score.ci_high}
    return {"models": models, "incomplete_panels": sum(row.judge_failed for row in rows)}
