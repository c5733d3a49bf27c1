"""MKQA scores in either mode, from files (``babelbench score mkqa``) or from stored responses (evaluations).

Scoring files spreads the languages over one process per core: each
language is independent, and the gold file — read once, before the
workers fork — is shared with them, not copied through pipes.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

from tasks.errors import ConfigError
from tasks.metrics import mkqa_improved, mkqa_official
from tasks.metrics.mkqa_data import (
    MKQA_LANGUAGES,
    GoldExample,
    Prediction,
    prediction_files,
    read_gold,
    read_predictions,
)

Mode = Literal["official", "improved"]
ScoreLanguage = Callable[[Sequence[GoldExample], dict[str, Prediction], str], dict[str, float | None]]
MODES: dict[str, ScoreLanguage] = {"official": mkqa_official.score_language, "improved": mkqa_improved.score_language}


def score_files(gold_path: Path, predictions: Path, langs: list[str], mode: Mode) -> dict[str, Any]:
    """Score prediction files (``DIR/<lang>.jsonl`` or one FILE for one language) against an MKQA gold file."""
    unknown = sorted(set(langs) - set(MKQA_LANGUAGES))
    if unknown:
        raise ConfigError(f"not MKQA locales: {', '.join(unknown)} (MKQA has {', '.join(MKQA_LANGUAGES)})")
    if mode not in MODES:
        raise ConfigError(f"MKQA mode {mode!r}: choose official or improved")
    files = prediction_files(predictions, langs)
    gold = read_gold(gold_path)
    jobs = [(lang, path, mode) for lang, path in files.items()]
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2:
        languages = [MODES[mode](gold, read_predictions(path), lang) for lang, path, mode in jobs]
    else:
        # fork: the workers inherit the gold examples instead of unpickling a copy each
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_receive_gold,
                                 initargs=(gold,)) as pool:
            languages = list(pool.map(_score_file, jobs))
    by_lang = dict(zip(files, languages, strict=True))
    return {"mode": mode, "languages": by_lang, "macro": mkqa_official.macro(by_lang)}


_worker_gold: Sequence[GoldExample] = ()  # set in each worker process by _receive_gold


def _receive_gold(gold: Sequence[GoldExample]) -> None:
    global _worker_gold
    _worker_gold = gold


def _score_file(job: tuple[str, Path, Mode]) -> dict[str, float | None]:
    lang, path, mode = job
    return MODES[mode](_worker_gold, read_predictions(path), lang)
