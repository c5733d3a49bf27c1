"""From stored responses and verdicts to leaderboard rows, by each recipe's protocol.

Each recipe has a scorer reading the warehouse and returning
:class:`~tasks.metrics.score.Score` values; this module writes them as one
model's rows of ``leaderboard``, with the mode that produced them and the
judges whose verdicts counted.  Several judges form a panel: a response is
correct when more of them said yes than no.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Literal

import msgspec
from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import ConfigError
from tasks.metrics import mkqa_improved, mkqa_official
from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.eclektic import Judged, eclektic_scores
from tasks.metrics.mkqa_data import GoldAnswer, GoldExample, Prediction
from tasks.metrics.score import ALL, Score
from tasks.metrics.xrag import PanelRow, majority, xrag_scores
from tasks.stage import StageOutput
from tasks.text.language_id import lingua_code, lingua_supports
from tasks.warehouse.db import Warehouse

#: The metric each recipe's protocol leads with.
HEADLINE = {"eclektic": "overall_success", "xrag": "accuracy", "mkqa": "f1"}


class ScoringConfig(BaseModel):
    """How scores and their intervals are computed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resamples: int = Field(1000, ge=10, description="Bootstrap resamples of the questions for each 95% interval.")
    seed: int = Field(0, description="Seed of the bootstrap.")
    mkqa_mode: Literal["improved", "official"] = Field(
        "improved", description="MKQA scoring: improved (for generative models) or official (the paper's scorer).")


Scorer = Callable[[Warehouse, str, str, list[str], ScoringConfig], tuple[list[Score], str]]


def _judged_responses(wh: Warehouse, benchmark: str, model: str, judges: list[str]) -> list[dict]:
    """Every response of ``model`` with its instance and the listed judges' verdicts."""
    return wh.query_dicts(
        "SELECT i.item_id, i.source_lang, i.lang, i.setting, r.status, r.answer, r.language_status, r.detected_lang,"
        " coalesce(list(j.verdict ORDER BY j.judge) FILTER (j.judge IS NOT NULL), []) AS verdicts"
        " FROM responses r JOIN instances i USING (benchmark, instance_id)"
        " LEFT JOIN judgements j ON j.benchmark = r.benchmark AND j.instance_id = r.instance_id AND j.model = r.model"
        "   AND list_contains(?, j.judge)"
        " WHERE r.benchmark = ? AND r.model = ? GROUP BY ALL ORDER BY ALL", [judges, benchmark, model])


def eclektic_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                    config: ScoringConfig) -> tuple[list[Score], str]:
    """Per setting: overall success, transfer and source accuracy over all target languages and per target.

    Every setting's pairs take their source half from the closed-book answer in the source language; a
    question evaluated without it cannot form pairs and is left out (said in the message).  Source accuracy is
    pooled over the pairs, like the file scorer's; ``source_question_accuracy`` is the closed-book share of
    questions answered right in their source language, paired or not.  The source × target matrix is stored
    as rows whose ``subset`` is ``source:<lang>`` and whose ``lang`` is the target.
    """
    rows = _judged_responses(wh, benchmark, model, judges)
    sources = {r["item_id"]: r for r in rows if r["setting"] == "closed_book" and r["lang"] == r["source_lang"]}
    by_setting: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["lang"] != row["source_lang"]:
            by_setting[row["setting"]].append(row)
    orphans = {r["item_id"] for targets in by_setting.values() for r in targets} - set(sources)
    scores: list[Score] = []
    if sources:
        accepted = [majority(r["verdicts"]) for r in sources.values()]
        scores.append(Score("closed_book", ALL, ALL, "source_question_accuracy", sum(accepted) / len(accepted),
                            None, None, len(accepted)))
        by_setting.setdefault("closed_book", [])  # its rows say "undefined" when no question has pairs
    for setting, targets in sorted(by_setting.items()):
        paired = {r["item_id"] for r in targets} & set(sources)
        judged = [_judged(r) for r in targets if r["item_id"] in sources]
        judged += [_judged(sources[item]) for item in (set(sources) if setting == "closed_book" else paired)]
        if judged:
            scores += _eclektic_setting(setting, judged, config)
    note = f"; {len(orphans)} question(s) without a source-language answer left out" if orphans else ""
    return scores, note


def _eclektic_setting(setting: str, judged: list[Judged], config: ScoringConfig) -> list[Score]:
    """One setting's pooled scores over all targets and per target, and its source × target matrix."""
    scores: list[Score] = []
    for lang in [ALL, *sorted({r.lang for r in judged if r.lang != r.source_lang})]:
        subset = judged if lang == ALL else [r for r in judged if r.lang in (lang, r.source_lang)]
        result = eclektic_scores(subset, seed=config.seed, resamples=config.resamples)
        ci = result["ci"]
        scores.append(Score(setting, lang, ALL, "overall_success", result["overall_success"],
                            *ci["overall_success"], result["n_pairs"]))
        scores.append(Score(setting, lang, ALL, "transfer", result["transfer"], *ci["transfer"], result["n_pairs"]))
        if lang == ALL:
            scores.append(Score(setting, ALL, ALL, "source_accuracy", result["source_accuracy"], None, None,
                                result["n_pairs"]))
            scores += [Score(setting, target, f"source:{source}", metric, cell[metric], None, None, cell["n"])
                       for source, row in result["matrix"].items() for target, cell in row.items() if target != source
                       for metric in ("overall_success", "transfer")]
    return scores


def _judged(row: dict) -> Judged:
    return Judged(row["item_id"], row["source_lang"], row["lang"], majority(row["verdicts"]))


def xrag_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                config: ScoringConfig) -> tuple[list[Score], str]:
    """Accuracy (panel majority and the question's language) and the wrong-language share, per slice."""
    qtypes = dict(wh.query("SELECT item_id, qtype FROM qa_items WHERE benchmark = ?", [benchmark]))
    panel = [PanelRow(r["item_id"], r["setting"], r["lang"], qtypes.get(r["item_id"]), tuple(r["verdicts"]),
                      _language_ok(r)) for r in _judged_responses(wh, benchmark, model, judges)]
    unsupported = sorted({r.lang for r in panel if r.language_ok is None and not lingua_supports(r.lang)})
    note = f"; language check not applied to {', '.join(unsupported)} (lingua cannot detect it)" if unsupported else ""
    return xrag_scores(panel, seed=config.seed, resamples=config.resamples), note


def _language_ok(response: dict) -> bool | None:
    """Whether lingua sees the question's language in the response, as stored with it (``responses``);
    None when it was not checked (a failed response, a language lingua does not know, too few letters)."""
    if response["status"] != "ok" or response["language_status"] != "ok":
        return None
    return response["detected_lang"] == lingua_code(response["lang"])


def mkqa_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                config: ScoringConfig) -> tuple[list[Score], str]:
    """EM and F1 (0–100) per locale and pooled, against each instance's gold answers.

    The improved mode scores each answer on its own, so its intervals resample examples (an example's
    locales together); the official mode's threshold sweep scores a language as a whole, so its values
    come without intervals.  A failed response counts as no answer.
    """
    rows = wh.query_dicts(
        "SELECT i.item_id, i.setting, i.lang, i.gold, r.status, r.answer FROM responses r"
        " JOIN instances i USING (benchmark, instance_id) WHERE r.benchmark = ? AND r.model = ? ORDER BY ALL",
        [benchmark, model])
    cells: dict[tuple[str, str], tuple[list[GoldExample], dict[str, Prediction]]] = defaultdict(lambda: ([], {}))
    for row in rows:
        gold, predictions = cells[(row["setting"], row["lang"])]
        answers = msgspec.json.decode(row["gold"] or "[]", type=tuple[GoldAnswer, ...])
        gold.append(GoldExample(row["item_id"], "", {row["lang"]: ""}, {row["lang"]: answers}))
        predictions[row["item_id"]] = Prediction(row["answer"] if row["status"] == "ok" else None)
    scores: list[Score] = []
    if config.mkqa_mode == "official":
        for (setting, lang), (gold, predictions) in sorted(cells.items()):
            metrics = mkqa_official.score_language(gold, predictions, lang)
            scores += [Score(setting, lang, ALL, "em", metrics["best_em"], None, None, len(gold)),
                       Score(setting, lang, ALL, "f1", metrics["best_f1"], None, None, len(gold))]
        return scores, ""
    per_setting: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for (setting, lang), (gold, predictions) in sorted(cells.items()):
        results = [mkqa_improved.example_scores(predictions[e.example_id], e, lang)[:2] for e in gold]
        for example, result in zip(gold, results, strict=True):
            per_setting[setting][example.example_id].append(result)
        scores += _mkqa_means(setting, lang, [[r] for r in results], config)
    for setting, by_example in sorted(per_setting.items()):
        scores += _mkqa_means(setting, ALL, list(by_example.values()), config)
    return scores, ""


def _mkqa_means(setting: str, lang: str, clusters: list[list[tuple[float, float]]], config: ScoringConfig) -> list[Score]:
    """Mean EM and F1 ×100 over answers, with intervals resampling the clusters (examples)."""
    sizes = [len(cluster) for cluster in clusters]
    scores = []
    for metric, index in (("em", 0), ("f1", 1)):
        sums = [sum(result[index] for result in cluster) for cluster in clusters]
        value, low, high = clustered_ratio_ci(sums, sizes, n_resamples=config.resamples, seed=config.seed)
        scores.append(Score(setting, lang, ALL, metric, *(None if v is None else 100.0 * v for v in (value, low, high)),
                            sum(sizes)))
    return scores


SCORERS: dict[str, Scorer] = {"eclektic": eclektic_scorer, "xrag": xrag_scorer, "mkqa": mkqa_scorer}


def score_model(wh: Warehouse, benchmark: str, recipe: str, model: str, judges: list[str], config: ScoringConfig,
                fp: str) -> StageOutput:
    """Replace ``model``'s leaderboard rows on ``benchmark`` with the scores of its stored responses."""
    if recipe not in SCORERS:
        raise ConfigError(f"no scorer for recipe {recipe!r} (scorers: {', '.join(sorted(SCORERS))})")
    scores, note = SCORERS[recipe](wh, benchmark, model, judges, config)
    mode = config.mkqa_mode if recipe == "mkqa" else "protocol"
    rows = [[benchmark, s.setting, s.lang, s.subset, model, s.metric, s.value, s.ci_low, s.ci_high, s.n, mode,
             sorted(judges), fp] for s in scores]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM leaderboard WHERE benchmark = ? AND model = ?", [benchmark, model])
        if rows:
            cur.executemany("INSERT INTO leaderboard VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    headline = next((s for s in scores if s.metric == HEADLINE[recipe] and s.lang == ALL and s.subset == ALL), None)
    shown = f"{HEADLINE[recipe]} {headline.value:.3f}" if headline and headline.value is not None else "no headline"
    return StageOutput(rows=len(rows), message=f"{len(rows)} scores; {shown} ({headline.setting if headline else '-'})"
                                                f"{note}")
