"""XRAG's accuracy: the judge panel's majority says correct AND the answer is in the question's language.

The majority is of the whole configured panel (:mod:`tasks.metrics.panel`): a missing verdict is never a
yes, and a failed response stays incorrect in every denominator.  Beside the accuracy, ``wrong_language``,
``unchecked`` and ``abstained`` are shares of the answered responses.  Intervals resample questions.  The
pooled ``all`` is over the non-English question languages; English is the baseline row.

See ``docs/evaluation.md``, "XRAG".
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
    ``language_ok`` is None when the language was not checked.  ``answered`` is
    False for a response whose call failed, could not be read, or was stopped by
    the budget; ``abstained`` marks an answered response that declines (its
    language is not judged at all).
    """

    question_id: str
    setting: str
    lang: str
    qtype: str | None
    verdicts: tuple[str | None, ...]
    language_ok: bool | None
    answered: bool = True
    abstained: bool = False

    @property
    def language(self) -> str | None:
        """Where the answer stands under the language rule: 'abstained', 'wrong', 'unchecked' or 'ok'; None for a
        response without an answer."""
        if not self.answered:
            return None
        if self.abstained:
            return "abstained"
        return {True: "ok", False: "wrong", None: "unchecked"}[self.language_ok]

    @property
    def decision(self) -> bool | None:
        """Correct (True), incorrect (False), or undecided because verdicts are missing (None)."""
        if not self.answered or self.abstained or self.language_ok is False:
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
    sizes = [len(g) for g in counted]
    tally = Tally.of((r.answered, r.judge_failed) for r in rows)
    scores = [Score(setting, lang, subset, "accuracy",
                    *as_percent(clustered_ratio_ci(correct, sizes, n_resamples=resamples, seed=seed)),
                    sum(sizes)).counted(tally)]
    answered = [sum(r.answered for r in g) for g in groups]
    for metric, standing in (("wrong_language", "wrong"), ("unchecked", "unchecked"), ("abstained", "abstained")):
        share = clustered_ratio_ci([sum(r.language == standing for r in g) for g in groups], answered,
                                   n_resamples=resamples, seed=seed)
        scores.append(Score(setting, lang, subset, metric, *as_percent(share), sum(answered)).counted(tally))
    return scores


def xrag_scores(rows: Iterable[PanelRow], *, seed: int = 0, resamples: int = 1000,
                judge_failures: JudgeFailures = "incorrect") -> list[Score]:
    """Accuracy and the wrong-language, unchecked and abstained shares of the answered responses (×100), per
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
