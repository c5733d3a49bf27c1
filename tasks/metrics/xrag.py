"""XRAG's accuracy: the judge panel's majority says correct AND the answer is in the question's language.

The panel decides by a strict majority of the whole configured panel
(:mod:`tasks.metrics.panel`): a missing verdict is not a yes, so a panel
that lost a judge needs as many yes as a full one; such incomplete panels
are counted (``judge_failed``).  A response that failed (call or parse
failed, stopped by the budget) is incorrect and stays in every denominator.
An answer whose decision the missing verdicts could have changed is
incorrect too, unless the user asks to leave it out (``exclude``).  The
language rule follows the paper: a correct answer in the wrong language is
wrong, and the share of such answers is reported beside the accuracy; an
answer whose language could not be checked (too short or ambiguous by
script, or a language the detector does not know) is counted as
``unchecked`` and decided by the panel alone.  Intervals resample questions
(a question's languages and types move together).

The pooled ``all`` language is over the question languages other than
English, the pivot and baseline of the protocol; English keeps its own row,
reported beside it as the baseline.  A setting asked only in English (the
no-retrieval and oracle settings) therefore has no ``all`` row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.panel import JudgeFailures, panel_decision
from tasks.metrics.score import ALL, Score, Tally, as_percent

#: The protocol's pivot language: its questions are the baseline, reported apart from the pooled languages.
BASELINE_LANG = "en"


@dataclass(frozen=True)
class PanelRow:
    """One response: its question, the panel's verdicts, whether its language matched, and whether it was answered.

    ``verdicts`` has one entry per configured judge, 'yes' | 'no' | None (missing).
    ``language_ok`` is None when the language was not checked (the row does not
    count towards the wrong-language share).  ``answered`` is False for a
    response whose call failed, could not be read, or was stopped by the budget.
    """

    question_id: str
    setting: str
    lang: str
    qtype: str | None
    verdicts: tuple[str | None, ...]
    language_ok: bool | None
    answered: bool = True

    @property
    def decision(self) -> bool | None:
        """Correct (True), incorrect (False), or undecided because verdicts are missing (None)."""
        if not self.answered or self.language_ok is False:
            return False
        return panel_decision(self.verdicts)

    @property
    def judge_failed(self) -> bool:
        """Answered, but the panel is incomplete: some judge gave no verdict."""
        return self.answered and any(v is None for v in self.verdicts)


def _slice_scores(rows: list[PanelRow], setting: str, lang: str, subset: str, *, seed: int, resamples: int,
                  judge_failures: JudgeFailures) -> list[Score]:
    by_question: dict[str, list[PanelRow]] = defaultdict(list)
    for row in rows:
        by_question[row.question_id].append(row)
    groups = list(by_question.values())
    counted = [[r for r in g if r.decision is not None or judge_failures == "incorrect"] for g in groups]
    correct = [sum(r.decision is True for r in g) for g in counted]
    checked = [sum(r.language_ok is not None for r in g) for g in groups]
    wrong = [sum(r.language_ok is False for r in g) for g in groups]
    sizes = [len(g) for g in counted]
    accuracy = clustered_ratio_ci(correct, sizes, n_resamples=resamples, seed=seed)
    wrong_language = clustered_ratio_ci(wrong, checked, n_resamples=resamples, seed=seed)
    tally = Tally.of((r.answered, r.judge_failed) for r in rows)
    unchecked = sum(r.answered and r.language_ok is None for r in rows)
    return [Score(setting, lang, subset, "accuracy", *as_percent(accuracy), sum(sizes)).counted(tally),
            Score(setting, lang, subset, "wrong_language", *as_percent(wrong_language), sum(checked)).counted(tally),
            Score(setting, lang, subset, "unchecked", float(unchecked), None, None, tally.answered).counted(tally)]


def xrag_scores(rows: Iterable[PanelRow], *, seed: int = 0, resamples: int = 1000,
                judge_failures: JudgeFailures = "incorrect") -> list[Score]:
    """Accuracy and wrong-language share (×100) and the count of answers whose language went unchecked, per
    setting × language × question type, per setting × language, and per setting over the non-English languages."""
    slices: dict[tuple[str, str, str], list[PanelRow]] = defaultdict(list)
    for row in rows:
        if row.lang != BASELINE_LANG:
            slices[(row.setting, ALL, ALL)].append(row)
        slices[(row.setting, row.lang, ALL)].append(row)
        if row.qtype:
            slices[(row.setting, row.lang, row.qtype)].append(row)
    scores: list[Score] = []
    for (setting, lang, subset), members in sorted(slices.items()):
        scores += _slice_scores(members, setting, lang, subset, seed=seed, resamples=resamples,
                                judge_failures=judge_failures)
    return scores
