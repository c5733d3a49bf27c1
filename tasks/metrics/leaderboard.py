"""From stored responses and verdicts to leaderboard rows, by each recipe's protocol.

Each recipe (:mod:`tasks.recipe`) has a scorer reading the warehouse and returning
:class:`~tasks.metrics.score.Score` values — ECLEKTIC's and XRAG's are here, MKQA's in
:mod:`tasks.metrics.mkqa_leaderboard`; this module writes them as one
model's rows of ``leaderboard``, with the mode that produced them, the
judges whose verdicts counted, and the slice's response counts (answered,
failed, judge_failed).  Several judges form a panel: a response is correct
when a strict majority of the whole configured panel said yes
(:mod:`tasks.metrics.panel`).  A response that failed is never dropped and
never an abstention: it is incorrect in every headline metric, and counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.inference.language import target_code
from tasks.inference.reading import strip_citations
from tasks.inference.refusals import is_refusal
from tasks.metrics.eclektic import Judged, eclektic_scores, question_successes
from tasks.metrics.panel import JudgeFailures, panel_decision
from tasks.metrics.score import ALL, Score, Tally
from tasks.metrics.windows import Question, window_scores
from tasks.metrics.xrag import BASELINE_LANG, PanelRow, question_accuracy, xrag_scores
from tasks.recipe import recipe as recipe_of
from tasks.stage import StageOutput
from tasks.text.answer_match import normalise_answer
from tasks.warehouse.db import Warehouse

#: The columns of ``leaderboard`` in the order :func:`score_model` writes them.
LEADERBOARD_COLUMNS = ("benchmark", "setting", "lang", "subset", "model", "metric", "value", "ci_low", "ci_high", "n",
                       "mode", "judges", "fingerprint", "answered", "failed", "judge_failed")


class ScoringConfig(BaseModel):
    """How scores and their intervals are computed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resamples: int = Field(1000, ge=10, description="Bootstrap resamples of the questions for each 95% interval.")
    seed: int = Field(0, description="Seed of the bootstrap.")
    mkqa_mode: Literal["improved", "official"] = Field(
        "improved", description="MKQA scoring: improved (for generative models) or official (the paper's scorer).")
    judge_failures: JudgeFailures = Field(
        "incorrect", description="An answer whose verdict is missing (a judge's call failed, its reply was"
        " unreadable, the budget stopped it) and would decide it: incorrect (default), or exclude it from the"
        " metric's denominator. Counted as judge_failed either way.")


def _judged_responses(wh: Warehouse, benchmark: str, model: str, judges: list[str]) -> list[dict]:
    """Every response of ``model`` with its instance and the panel's verdicts, one per judge of ``judges`` in
    name order (None where that judge gave none: failed, unreadable, stopped by the budget, or never asked),
    ``answered`` (status ok) and ``judge_failed`` (answered, and some judge's verdict is missing)."""
    panel = sorted(judges)
    rows = wh.query_dicts(
        "SELECT i.item_id, i.source_lang, i.lang, i.setting, r.status, r.language_status, r.detected_lang,"
        " r.answer AS given_answer, i.answer AS gold_answer,"
        " coalesce(list(struct_pack(judge := j.judge, verdict := j.verdict)) FILTER (j.judge IS NOT NULL), [])"
        "   AS given"
        " FROM responses r JOIN instances i USING (benchmark, instance_id)"
        " LEFT JOIN judgements j ON j.benchmark = r.benchmark AND j.instance_id = r.instance_id AND j.model = r.model"
        "   AND list_contains(?, j.judge)"
        " WHERE r.benchmark = ? AND r.model = ? GROUP BY ALL ORDER BY i.item_id, i.setting, i.lang",
        [panel, benchmark, model])
    for row in rows:
        given = {entry["judge"]: entry["verdict"] for entry in row.pop("given")}
        row["verdicts"] = tuple(given.get(judge) for judge in panel)
        row["answered"] = row["status"] == "ok"
        row["judge_failed"] = row["answered"] and None in row["verdicts"]
    return rows


def _tally(rows: Iterable[dict]) -> Tally:
    return Tally.of((row["answered"], row["judge_failed"]) for row in rows)


def _decision(row: dict) -> bool | None:
    """The panel's decision on a response: a failed response is incorrect; None when missing verdicts decide."""
    return panel_decision(row["verdicts"]) if row["answered"] else False


def _judge_failures_note(rows: Iterable[dict], judge_failures: JudgeFailures) -> str:
    failed = sum(row["judge_failed"] for row in rows)
    if not failed:
        return ""
    rule = ("left out of the denominators where it decides (--judge-failures exclude)" if judge_failures == "exclude"
            else "not a yes")
    return f"; {failed} answer(s) lack a judge's verdict (incomplete panel): a missing verdict is {rule}"


def eclektic_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                    config: ScoringConfig) -> tuple[list[Score], str]:
    """Per setting: overall success, transfer and source accuracy over all target languages and per target.

    Every setting's pairs take their source half from the closed-book answer in the source language; a
    question evaluated without it cannot form pairs and is left out (said in the message).  Source accuracy is
    pooled over the pairs, like the file scorer's; ``source_question_accuracy`` is the closed-book share of
    questions answered right in their source language, paired or not.  The source × target matrix is stored
    as rows whose ``subset`` is ``source:<lang>`` and whose ``lang`` is the target (the diagonal included), and
    its averages as rows of ``subset`` ``matrix:with_diagonal`` and ``matrix:without_diagonal`` (``n``: cells).
    A failed response is a "no"; an answer whose judge gave no verdict is a "no" too, or, with
    ``judge_failures: exclude``, left out with every pair it belongs to (a source answer takes its pairs along).
    """
    rows = _judged_responses(wh, benchmark, model, judges)
    sources, by_setting = _eclektic_targets(rows)
    orphans = {r["item_id"] for targets in by_setting.values() for r in targets} - set(sources)
    scores: list[Score] = []
    if sources:
        kept = [d for d in map(_decision, sources.values()) if d is not None or config.judge_failures == "incorrect"]
        accuracy = 100.0 * sum(d is True for d in kept) / len(kept) if kept else None
        scores.append(Score("closed_book", ALL, ALL, "source_question_accuracy", accuracy, None, None,
                            len(kept)).counted(_tally(sources.values())))
    for setting, members in _eclektic_members(sources, by_setting).items():
        scores += _eclektic_setting(setting, members, config)
    note = f"; {len(orphans)} question(s) without a source-language answer left out" if orphans else ""
    return scores, note + _judge_failures_note(rows, config.judge_failures)


def _eclektic_targets(rows: list[dict]) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """The closed-book source answers by question, and each setting's answers in other languages."""
    sources = {r["item_id"]: r for r in rows if r["setting"] == "closed_book" and r["lang"] == r["source_lang"]}
    by_setting: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["lang"] != row["source_lang"]:
            by_setting[row["setting"]].append(row)
    if sources:
        by_setting.setdefault("closed_book", [])  # its rows say "undefined" when no question has pairs
    return sources, by_setting


def _eclektic_members(sources: dict[str, dict], by_setting: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Per setting, the responses its scores read: the target answers that have a source answer, and those
    source answers."""
    members = {}
    for setting, targets in sorted(by_setting.items()):
        paired = [r for r in targets if r["item_id"] in sources]
        items = set(sources) if setting == "closed_book" else {r["item_id"] for r in paired}
        if paired or items:
            members[setting] = paired + [sources[item] for item in sorted(items)]
    return members


def _slice_rows(members: list[dict], target: str, source: str = ALL) -> list[dict]:
    """The responses a slice reads: its target answers (restricted to questions from ``source``) with their
    questions' source answers; every response for the ``ALL`` target; the source answers alone on the diagonal."""
    if target == ALL:
        return members
    if target == source:
        return [r for r in members if r["lang"] == r["source_lang"] == source]
    targets = [r for r in members if r["lang"] == target != r["source_lang"] and source in (ALL, r["source_lang"])]
    items = {r["item_id"] for r in targets}
    return targets + [r for r in members if r["lang"] == r["source_lang"] and r["item_id"] in items]


def _kept(rows: list[dict], judge_failures: JudgeFailures) -> list[Judged]:
    """The slice's answers as judged: undecided ones are "no", or left out with ``exclude`` (a question whose
    source answer is left out has no pairs: all its answers go)."""
    decided = {(r["item_id"], r["lang"]): _decision(r) for r in rows}
    if judge_failures == "exclude":
        lost = {r["item_id"] for r in rows if r["lang"] == r["source_lang"] and decided[(r["item_id"], r["lang"])] is None}
        rows = [r for r in rows if decided[(r["item_id"], r["lang"])] is not None and r["item_id"] not in lost]
    return [Judged(r["item_id"], r["source_lang"], r["lang"], decided[(r["item_id"], r["lang"])] is True) for r in rows]


def _eclektic_setting(setting: str, members: list[dict], config: ScoringConfig) -> list[Score]:
    """One setting's pooled scores over all targets and per target, its source × target matrix and its means."""
    scores: list[Score] = []
    for lang in [ALL, *sorted({r["lang"] for r in members if r["lang"] != r["source_lang"]})]:
        subset = _slice_rows(members, lang)
        tally = _tally(subset)
        result = eclektic_scores(_kept(subset, config.judge_failures), seed=config.seed, resamples=config.resamples)
        ci = result["ci"]
        scores.append(Score(setting, lang, ALL, "overall_success", result["overall_success"],
                            *ci["overall_success"], result["n_pairs"]).counted(tally))
        scores.append(Score(setting, lang, ALL, "transfer", result["transfer"], *ci["transfer"],
                            result["n_transfer"]).counted(tally))
        if lang != ALL:
            continue
        scores.append(Score(setting, ALL, ALL, "source_accuracy", result["source_accuracy"], None, None,
                            result["n_pairs"]).counted(tally))
        for source, row in result["matrix"].items():
            for target, cell in row.items():
                cell_tally = _tally(_slice_rows(members, target, source))
                scores += [Score(setting, target, f"source:{source}", metric, cell[metric], None, None,
                                 cell["n" if metric == "overall_success" else "n_transfer"]).counted(cell_tally)
                           for metric in ("overall_success", "transfer")]
        scores += [Score(setting, ALL, f"matrix:{name}", metric, mean["value"], None, None, mean["n"]).counted(tally)
                   for metric, means in result["matrix_means"].items() for name, mean in means.items()]
    return scores


def xrag_scorer(wh: Warehouse, benchmark: str, model: str, judges: list[str],
                config: ScoringConfig) -> tuple[list[Score], str]:
    """Accuracy (panel majority and the question's language) and the wrong-language, unchecked and abstained shares
    of the answered responses, per slice; ``all`` pools the non-English languages (English is the baseline row)."""
    rows, panel = _panel_rows(wh, benchmark, model, judges)
    unchecked = sum(r.language == "unchecked" for r in panel)
    note = (f"; {unchecked} answer(s) whose language could not be told (no letters, or a script other languages share"
            " and no lingua model): judged by the panel alone, counted as unchecked") if unchecked else ""
    scores = xrag_scores(panel, seed=config.seed, resamples=config.resamples, judge_failures=config.judge_failures)
    return scores, note + _judge_failures_note(rows, config.judge_failures)


def _panel_rows(wh: Warehouse, benchmark: str, model: str, judges: list[str]) -> tuple[list[dict], list[PanelRow]]:
    """The model's judged responses, and each as XRAG's accuracy reads it."""
    qtypes = dict(wh.query("SELECT item_id, qtype FROM qa_items WHERE benchmark = ?", [benchmark]))
    rows = _judged_responses(wh, benchmark, model, judges)
    return rows, [PanelRow(r["item_id"], r["setting"], r["lang"], qtypes.get(r["item_id"]), r["verdicts"],
                           language_ok(r), r["answered"], r["answered"] and is_refusal(r["given_answer"], r["lang"]))
                  for r in rows]


def xrag_window_questions(wh: Warehouse, benchmark: str, model: str, judges: list[str], config: ScoringConfig,
                          windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
    """Per (setting, language), each question's accuracy with its window: the non-English languages pooled
    (``all``, the headline's slice) and the English baseline row apart (the only language of its closed book, where
    memory alone answers)."""
    slices: dict[tuple[str, str], list[PanelRow]] = defaultdict(list)
    for row in _panel_rows(wh, benchmark, model, judges)[1]:
        slices[(row.setting, BASELINE_LANG if row.lang == BASELINE_LANG else ALL)].append(row)
    return _windowed({key: question_accuracy(rows, config.judge_failures) for key, rows in slices.items()}, windows)


def eclektic_window_questions(wh: Warehouse, benchmark: str, model: str, judges: list[str], config: ScoringConfig,
                              windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
    """Per setting, each question's successes over its pairs with its window (the headline pools the pairs)."""
    members = _eclektic_members(*_eclektic_targets(_judged_responses(wh, benchmark, model, judges)))
    return _windowed({(s, ALL): question_successes(_kept(rows, config.judge_failures)) for s, rows in members.items()},
                     windows)


def _windowed(by_slice: dict[tuple[str, str], dict[str, tuple[int, int]]],
              windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
    return {key: [Question(q, windows.get(q, "unknown"), hits, size) for q, (hits, size) in sorted(counts.items())]
            for key, counts in sorted(by_slice.items())}


def language_ok(response: dict) -> bool | None:
    """Whether the response is in the question's language, as stored with it (``responses``): an answer that is
    the gold answer itself (a name the translation kept as it was) always is; otherwise decided only when its
    ``language_status`` is ok; None when it was not checked (a failed response, ``unchecked``, ``unsupported``)."""
    if response["status"] != "ok":
        return None
    gold = normalise_answer(strip_citations(response["gold_answer"] or ""))
    if gold and normalise_answer(strip_citations(response["given_answer"] or "")) == gold:
        return True
    if response["language_status"] != "ok":
        return None
    return response["detected_lang"] == target_code(response["lang"])


def _counted(scores: list[Score], wh: Warehouse, benchmark: str, model: str, judges: list[str]) -> list[Score]:
    """Scores with their slice's response counts: a scorer that did not fill them (one whose slices are plain
    setting × language cells, such as MKQA's) gets the counts of the model's responses in the setting and the
    language (every language of the setting for ``all``)."""
    if all(s.answered is not None for s in scores):
        return scores
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in _judged_responses(wh, benchmark, model, judges):
        cells[(row["setting"], row["lang"])].append(row)
        cells[(row["setting"], ALL)].append(row)
    return [s if s.answered is not None else s.counted(_tally(cells.get((s.setting, s.lang), []))) for s in scores]


def headline_of(wh: Warehouse, benchmark: str) -> str:
    """The metric the benchmark's recipe leads with."""
    return recipe_of(wh.scalar("SELECT recipe FROM qa_benchmarks WHERE benchmark = ?", [benchmark])).headline


def failed_responses(wh: Warehouse, benchmark: str, model: str, cells: list[tuple[str, str]] | None = None) -> str | None:
    """"12 of 40 responses failed (call_failed: endpoint unreachable)" for ``model``'s responses in ``cells``
    ((setting, language) pairs; all when None), naming the commonest failure; None when none failed."""
    rows = [(status, reason) for setting, lang, status, reason in wh.query(
        "SELECT setting, lang, status, reason FROM responses WHERE benchmark = ? AND model = ?", [benchmark, model])
        if cells is None or (setting, lang) in cells]
    failures = Counter(f"{status}: {reason}" if reason else status for status, reason in rows if status != "ok")
    if not failures:
        return None
    (commonest, count), = failures.most_common(1)
    others = sum(failures.values()) - count
    return (f"{sum(failures.values())} of {len(rows)} responses failed ({commonest}"
            f"{f'; {others} other failure(s)' if others else ''})")


def score_model(wh: Warehouse, benchmark: str, recipe: str, model: str, judges: list[str], config: ScoringConfig,
                fp: str, windows: dict[str, str] | None = None) -> StageOutput:
    """Replace ``model``'s leaderboard rows on ``benchmark`` with the scores of its stored responses, by its recipe's
    scorer; with ``windows`` (item id → window relative to the model's cutoff) also the headline split by window and
    the gap."""
    protocol = recipe_of(recipe)
    scores, note = protocol.score(wh, benchmark, model, judges, config)
    if windows is not None:
        for (setting, lang), questions in protocol.window_questions(wh, benchmark, model, judges, config,
                                                                    windows).items():
            scores += window_scores(questions, setting, protocol.headline, lang=lang, seed=config.seed,
                                    resamples=config.resamples)
    scores = _counted(scores, wh, benchmark, model, judges)
    mode = protocol.score_mode(config)
    rows = [[benchmark, s.setting, s.lang, s.subset, model, s.metric, s.value, s.ci_low, s.ci_high, s.n, mode,
             sorted(judges), fp, s.answered, s.failed, s.judge_failed] for s in scores]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM leaderboard WHERE benchmark = ? AND model = ?", [benchmark, model])
        if rows:
            cur.executemany(f"INSERT INTO leaderboard ({', '.join(LEADERBOARD_COLUMNS)}) VALUES"
                            f" ({', '.join('?' * len(LEADERBOARD_COLUMNS))})", rows)
    headline = next((s for s in scores if s.metric == protocol.headline and s.lang == ALL and s.subset == ALL), None)
    shown = f"{protocol.headline} {headline.value:.3f}" if headline and headline.value is not None else "no headline"
    failed = failed_responses(wh, benchmark, model)
    return StageOutput(rows=len(rows), message=f"{len(rows)} scores; {shown} ({headline.setting if headline else '-'})"
                                                f"{f'; {failed}' if failed else ''}{note}")
