"""MKQA's leaderboard rows: EM and F1 of a model's stored responses against each instance's gold answers.

Beside the headline each slice has ``answerable_*`` and ``unanswerable_*`` scores, and counts the
responses it stands on (``answered``, ``failed``).  A failed response is neither an answer nor an
abstention: it scores 0 in both modes (as an abstention, a dead endpoint would tie ``abstain``).  The
official mode gets a no-answer probability of 1 for an abstention and 0 for an answer, with ties grouped
and failures passed as ``failed`` (:func:`tasks.metrics.mkqa_official.score_language`).

See ``docs/mkqa.md``, "In the leaderboard".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from tasks.metrics import mkqa_improved, mkqa_official
from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.mkqa_data import GoldAnswer, GoldExample, Prediction
from tasks.metrics.score import ALL, Score, Tally, as_percent
from tasks.warehouse.db import Warehouse

if TYPE_CHECKING:
    from tasks.metrics.leaderboard import ScoringConfig

#: (metric prefix, which examples): the headline over all examples, then the answerable and unanswerable ones.
SUBSETS: tuple[tuple[str, bool | None], ...] = (("", None), ("answerable_", True), ("unanswerable_", False))


@dataclass
class _Cell:
    """One (setting, locale) slice: its examples, the model's answers by example id, the ids whose response
    failed."""

    gold: list[GoldExample] = field(default_factory=list)
    answers: dict[str, str | None] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)


#: One example's result: (EM, F1, answerable, the response failed).
Result = tuple[float, float, bool, bool]


def mkqa_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                config: ScoringConfig) -> tuple[list[Score], str]:
    """EM and F1 (0–100), overall, answerable and unanswerable, per locale and over all locales.

    The improved mode scores each answer on its own, so its intervals resample examples (an example's
    locales together); the official mode's threshold sweep scores a locale as a whole, so its values come
    without intervals, and its row over all locales is the official macro average.
    """
    rows = wh.query_dicts(
        "SELECT i.item_id, i.setting, i.lang, i.gold, r.status, r.answer FROM responses r"
        " JOIN instances i USING (benchmark, instance_id) WHERE r.benchmark = ? AND r.model = ? ORDER BY ALL",
        [benchmark, model])
    cells: dict[tuple[str, str], _Cell] = defaultdict(_Cell)
    for row in rows:
        cell = cells[(row["setting"], row["lang"])]
        answers = msgspec.json.decode(row["gold"] or "[]", type=tuple[GoldAnswer, ...])
        cell.gold.append(GoldExample(row["item_id"], "", {row["lang"]: ""}, {row["lang"]: answers}))
        cell.answers[row["item_id"]] = row["answer"]
        if row["status"] != "ok":
            cell.failed.add(row["item_id"])
    return _official(cells) if config.mkqa_mode == "official" else _improved(cells, config), ""


def _improved(cells: dict[tuple[str, str], _Cell], config: ScoringConfig) -> list[Score]:
    """Plain means with intervals, per locale and pooled over a setting's locales (clusters: examples)."""
    scores: list[Score] = []
    per_setting: dict[str, dict[str, list[Result]]] = defaultdict(lambda: defaultdict(list))
    for (setting, lang), cell in sorted(cells.items()):
        results = [_improved_result(cell, example, lang) for example in cell.gold]
        for example, result in zip(cell.gold, results, strict=True):
            per_setting[setting][example.example_id].append(result)
        scores += _means(setting, lang, [[result] for result in results], config)
    for setting, by_example in sorted(per_setting.items()):
        scores += _means(setting, ALL, list(by_example.values()), config)
    return scores


def _improved_result(cell: _Cell, example: GoldExample, lang: str) -> Result:
    if example.example_id in cell.failed:
        return 0.0, 0.0, mkqa_improved.is_answerable(example, lang), True
    return *mkqa_improved.example_scores(Prediction(cell.answers[example.example_id]), example, lang), False


def _means(setting: str, lang: str, clusters: list[list[Result]], config: ScoringConfig) -> list[Score]:
    """Mean EM and F1 ×100 of each subset (:data:`SUBSETS`), with intervals resampling the clusters."""
    scores = []
    for prefix, answerable in SUBSETS:
        chosen = [[r for r in cluster if answerable is None or r[2] == answerable] for cluster in clusters]
        sizes = [len(cluster) for cluster in chosen]
        if not sum(sizes):
            continue  # e.g. no unanswerable example in this locale: nothing to show
        tally = Tally.of((not r[3], False) for cluster in chosen for r in cluster)
        for metric, index in (("em", 0), ("f1", 1)):
            sums = [sum(r[index] for r in cluster) for cluster in chosen]
            value = clustered_ratio_ci(sums, sizes, n_resamples=config.resamples, seed=config.seed)
            scores.append(Score(setting, lang, ALL, prefix + metric, *as_percent(value), sum(sizes)).counted(tally))
    return scores


def _official(cells: dict[tuple[str, str], _Cell]) -> list[Score]:
    """The official metrics per locale, and their official macro average over a setting's locales."""
    by_setting: dict[str, dict[str, tuple[dict[str, float | None], dict[bool | None, list[bool]]]]] = defaultdict(dict)
    for (setting, lang), cell in sorted(cells.items()):
        predictions = {example.example_id: _official_prediction(cell, example.example_id, lang)
                       for example in cell.gold}
        metrics = mkqa_official.score_language(cell.gold, predictions, lang, ties="grouped", failed=cell.failed)
        by_setting[setting][lang] = metrics, _answered_by_subset(cell, lang)
    scores: list[Score] = []
    for setting, languages in sorted(by_setting.items()):
        macro = mkqa_official.macro({lang: metrics for lang, (metrics, _) in languages.items()})
        pooled = {answerable: [ok for _, subsets in languages.values() for ok in subsets[answerable]]
                  for _, answerable in SUBSETS}
        for lang, (metrics, subsets) in [*languages.items(), (ALL, (macro, pooled))]:
            for prefix, answerable in SUBSETS:
                answered = subsets[answerable]
                if not answered:
                    continue
                tally = Tally.of((ok, False) for ok in answered)
                scores += [Score(setting, lang, ALL, prefix + metric, metrics[key], None, None, len(answered))
                           .counted(tally) for metric, key in _OFFICIAL_KEYS[answerable]]
    return scores


#: The official keys of each subset's EM and F1.  The official scorer reports no F1 over unanswerable
#: examples because it equals their EM: the gold is the empty string, and F1 against no tokens is 1 exactly
#: when the prediction has no tokens either — when it matches exactly.
_OFFICIAL_KEYS: dict[bool | None, tuple[tuple[str, str], ...]] = {
    None: (("em", "best_em"), ("f1", "best_f1")),
    True: (("em", "best_answerable_em"), ("f1", "best_answerable_f1")),
    False: (("em", "best_unanswerable_em"), ("f1", "best_unanswerable_em")),
}


def _answered_by_subset(cell: _Cell, lang: str) -> dict[bool | None, list[bool]]:
    """Per subset (:data:`SUBSETS`, answerable as the official scorer reads it), whether each of its examples'
    responses was answered (True) or failed."""
    subsets: dict[bool | None, list[bool]] = {None: [], True: [], False: []}
    for example in cell.gold:
        answered = example.example_id not in cell.failed
        subsets[None].append(answered)
        subsets[mkqa_official.is_answerable(example, lang)].append(answered)
    return subsets


def _official_prediction(cell: _Cell, example_id: str, lang: str) -> Prediction:
    """A response as an official prediction: an abstention is no text with no-answer probability 1, an answer
    its text with 0; a failed one is a placeholder (it is scored through ``failed``)."""
    text = cell.answers[example_id]
    if example_id in cell.failed:
        return Prediction(None)
    if mkqa_improved.abstains(Prediction(text), lang):
        return Prediction("", None, 1.0)
    return Prediction(text, None, 0.0)
