"""XRAG's accuracy: the judge panel's majority says correct AND the answer is in the question's language.

The panel's verdicts are combined by strict majority: more "yes" than "no"
among the judges that gave a verdict; a tie, or no verdict at all (every
judge failed, or the response itself failed), is not correct — a number
the panel could not agree on must not raise a score.  The language rule
follows the paper: a correct answer in the wrong language is wrong, and the
share of such answers is reported beside the accuracy.  Intervals resample
questions (a question's languages and types move together).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.score import ALL, Score


@dataclass(frozen=True)
class PanelRow:
    """One response: its question, the panel's verdicts ('yes' | 'no' | None), and whether its language matched.

    ``language_ok`` is None when the question's language cannot be detected
    (the check is then not applied, and the row does not count towards the
    wrong-language share).
    """

    question_id: str
    setting: str
    lang: str
    qtype: str | None
    verdicts: tuple[str | None, ...]
    language_ok: bool | None


def majority(verdicts: Sequence[str | None]) -> bool:
    """Strictly more 'yes' than 'no' among the verdicts given; ties and no verdict are not correct."""
    yes = sum(v == "yes" for v in verdicts)
    return yes > sum(v == "no" for v in verdicts)


def _slice_scores(rows: list[PanelRow], setting: str, lang: str, subset: str, *, seed: int,
                  resamples: int) -> list[Score]:
    by_question: dict[str, list[PanelRow]] = defaultdict(list)
    for row in rows:
        by_question[row.question_id].append(row)
    groups = list(by_question.values())
    correct = [sum(majority(r.verdicts) and r.language_ok is not False for r in g) for g in groups]
    checked = [sum(r.language_ok is not None for r in g) for g in groups]
    wrong = [sum(r.language_ok is False for r in g) for g in groups]
    sizes = [len(g) for g in groups]
    accuracy = clustered_ratio_ci(correct, sizes, n_resamples=resamples, seed=seed)
    wrong_language = clustered_ratio_ci(wrong, checked, n_resamples=resamples, seed=seed)
    return [Score(setting, lang, subset, "accuracy", *_percent(accuracy), sum(sizes)),
            Score(setting, lang, subset, "wrong_language", *_percent(wrong_language), sum(checked))]


def _percent(triple: tuple[float | None, float | None, float | None]) -> tuple[float | None, ...]:
    return tuple(None if v is None else 100.0 * v for v in triple)


def xrag_scores(rows: Iterable[PanelRow], *, seed: int = 0, resamples: int = 1000) -> list[Score]:
    """Accuracy and wrong-language share (×100) per setting × language × question type, per setting × language,
    and per setting over all languages."""
    slices: dict[tuple[str, str, str], list[PanelRow]] = defaultdict(list)
    for row in rows:
        slices[(row.setting, ALL, ALL)].append(row)
        slices[(row.setting, row.lang, ALL)].append(row)
        if row.qtype:
            slices[(row.setting, row.lang, row.qtype)].append(row)
    scores: list[Score] = []
    for (setting, lang, subset), members in sorted(slices.items()):
        scores += _slice_scores(members, setting, lang, subset, seed=seed, resamples=resamples)
    return scores
