"""MKQA scores in either mode, from files (``babelbench score mkqa``) or from stored responses (evaluations)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from tasks.errors import ConfigError
from tasks.metrics import mkqa_improved, mkqa_official
from tasks.metrics.mkqa_data import MKQA_LANGUAGES, GoldExample, Prediction, prediction_files, read_gold, read_predictions

Mode = Literal["official", "improved"]
ScoreLanguage = Callable[[Sequence[GoldExample], dict[str, Prediction], str], dict[str, float | None]]
MODES: dict[str, ScoreLanguage] = {"official": mkqa_official.score_language, "improved": mkqa_improved.score_language}


def score_predictions(gold: Sequence[GoldExample], predictions: dict[str, dict[str, Prediction]],
                      mode: Mode) -> dict[str, Any]:
    """``{"mode", "languages": {lang: metrics}, "macro": metrics}`` on the official 0–100 scale."""
    if mode not in MODES:
        raise ConfigError(f"MKQA mode {mode!r}: choose official or improved")
    languages = {lang: MODES[mode](gold, by_id, lang) for lang, by_id in predictions.items()}
    return {"mode": mode, "languages": languages, "macro": mkqa_official.macro(languages)}


def score_files(gold_path: Path, predictions: Path, langs: list[str], mode: Mode) -> dict[str, Any]:
    """Score prediction files (``DIR/<lang>.jsonl`` or one FILE for one language) against an MKQA gold file."""
    unknown = sorted(set(langs) - set(MKQA_LANGUAGES))
    if unknown:
        raise ConfigError(f"not MKQA locales: {', '.join(unknown)} (MKQA has {', '.join(MKQA_LANGUAGES)})")
    files = prediction_files(predictions, langs)
    gold = read_gold(gold_path)
    return score_predictions(gold, {lang: read_predictions(path) for lang, path in files.items()}, mode)
