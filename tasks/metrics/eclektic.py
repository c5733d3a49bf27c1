"""ECLEKTIC's metrics: overall success and transfer, pooled over (question, target language) pairs.

For a question q with source language s and a target language t ≠ s, the
pair counts as a success when the judge accepted the answer in t *and* in s
(the model knows the fact at its source and carries it over).  Overall
success divides the successes by all pairs; transfer divides them by the
pairs whose source answer was accepted, so a weak model that knows little
can still transfer well — which is why overall success is the headline.
Both are pooled over all pairs (not averaged per language pair), and their
95% intervals resample questions, the unit that was sampled.  Source
accuracy is pooled over the same pairs (the share whose source answer was
accepted), so that overall success ÷ transfer = source accuracy holds
however many targets each question has.  Every share is a percentage (0–100),
the scale of every recipe's leaderboard.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines
from tasks.metrics.bootstrap import clustered_ratio_ci
from tasks.metrics.score import as_percent


@dataclass(frozen=True)
class Judged:
    """One judged answer: question ``question_id`` asked in ``lang`` (its source language included)."""

    question_id: str
    source_lang: str
    lang: str
    correct: bool


@dataclass(frozen=True)
class _Question:
    source: str
    source_ok: bool
    targets: dict[str, bool]


def _questions(rows: Iterable[Judged]) -> dict[str, _Question]:
    """Per question its source verdict and target verdicts; a malformed set of rows is an error naming the question."""
    sources: dict[str, str] = {}
    verdicts: dict[str, dict[str, bool]] = defaultdict(dict)
    for row in rows:
        known = sources.setdefault(row.question_id, row.source_lang)
        if known != row.source_lang:
            raise ConfigError(f"question {row.question_id!r}: source language {row.source_lang!r} here, {known!r} before")
        if row.lang in verdicts[row.question_id]:
            raise ConfigError(f"question {row.question_id!r}: two judgements in {row.lang!r}")
        verdicts[row.question_id][row.lang] = row.correct
    questions = {}
    for question_id, by_lang in verdicts.items():
        source = sources[question_id]
        if source not in by_lang:
            raise ConfigError(f"question {question_id!r}: no judgement in its source language {source!r}, which every"
                              " pair needs")
        questions[question_id] = _Question(source, by_lang[source],
                                           {lang: ok for lang, ok in by_lang.items() if lang != source})
    return questions


def _cell(questions: Iterable[_Question], target: str | None = None) -> tuple[list[int], list[int], list[int]]:
    """Per question: successes, pairs, and pairs with an accepted source answer (restricted to ``target``)."""
    successes, pairs, source_ok = [], [], []
    for question in questions:
        targets = [ok for lang, ok in question.targets.items() if target is None or lang == target]
        successes.append(sum(ok and question.source_ok for ok in targets))
        pairs.append(len(targets))
        source_ok.append(len(targets) if question.source_ok else 0)
    return successes, pairs, source_ok


def question_successes(rows: Iterable[Judged]) -> dict[str, tuple[int, int]]:
    """Per question: its overall successes and its pairs (the units overall success pools)."""
    result = {}
    for question_id, question in _questions(rows).items():
        (successes,), (pairs,), _ = _cell([question])
        result[question_id] = (successes, pairs)
    return result


def _percent(numerator: int, denominator: int) -> float | None:
    return 100.0 * numerator / denominator if denominator else None


def _matrix_means(matrix: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The spec's averages of the source × target matrix, each metric with and without the diagonal.

    Unweighted means of the defined cells (a cell with an empty denominator has no value and is left out),
    so every language pair weighs the same whatever its number of pairs; ``n`` is the cells averaged.
    """
    means: dict[str, dict[str, dict[str, Any]]] = {}
    for metric in ("overall_success", "transfer"):
        means[metric] = {}
        for name, diagonal in (("with_diagonal", True), ("without_diagonal", False)):
            values = [cell[metric] for source, row in matrix.items() for target, cell in row.items()
                      if cell[metric] is not None and (diagonal or target != source)]
            means[metric][name] = {"value": sum(values) / len(values) if values else None, "n": len(values)}
    return means


def eclektic_scores(rows: Iterable[Judged], *, seed: int = 0, resamples: int = 1000) -> dict[str, Any]:
    """Overall success, transfer, source accuracy (percentages), the source × target matrix with its averages,
    and question-clustered intervals.

    ``n_pairs`` is the pairs (the denominator of overall success and source accuracy), ``n_transfer`` the pairs
    whose source answer was accepted (the denominator of transfer).  Matrix cells hold ``overall_success``,
    ``transfer``, ``n`` (pairs) and ``n_transfer``; the diagonal cell of a source language holds its questions'
    source accuracy as ``overall_success`` (a pair of a language with itself succeeds when the source answer is
    accepted, ``n`` its questions) and ``transfer`` 100 when any was.  ``matrix_means`` averages the cells per
    metric with and without the diagonal (:func:`_matrix_means`).
    """
    questions = _questions(rows)
    successes, pairs, source_ok = _cell(questions.values())
    n_pairs, n_transfer = sum(pairs), sum(source_ok)
    overall, overall_low, overall_high = as_percent(
        clustered_ratio_ci(successes, pairs, n_resamples=resamples, seed=seed))
    transfer, transfer_low, transfer_high = as_percent(
        clustered_ratio_ci(successes, source_ok, n_resamples=resamples, seed=seed))
    by_source: dict[str, list[_Question]] = defaultdict(list)
    for question in questions.values():
        by_source[question.source].append(question)
    matrix: dict[str, dict[str, dict[str, Any]]] = {}
    for source, group in sorted(by_source.items()):
        targets = sorted({lang for q in group for lang in q.targets})
        accepted = sum(q.source_ok for q in group)
        matrix[source] = {source: {"overall_success": _percent(accepted, len(group)),
                                   "transfer": 100.0 if accepted else None, "n": len(group), "n_transfer": accepted}}
        for target in targets:
            s, p, o = (sum(v) for v in _cell(group, target))
            matrix[source][target] = {"overall_success": _percent(s, p), "transfer": _percent(s, o), "n": p,
                                      "n_transfer": o}
    return {
        "overall_success": overall, "transfer": transfer, "source_accuracy": _percent(n_transfer, n_pairs),
        "n_pairs": n_pairs, "n_transfer": n_transfer, "matrix": matrix, "matrix_means": _matrix_means(matrix),
        "ci": {"overall_success": [overall_low, overall_high], "transfer": [transfer_low, transfer_high]},
    }


def read_judgements(path: Path) -> list[Judged]:
    """JSON lines ``{"question_id", "source_lang", "lang", "correct"}``; a bad line is an error naming file and line."""
    rows = []
    for number, record in read_json_lines(path, "judgement"):
        where = f"{path} line {number}"
        missing = [key for key in ("question_id", "source_lang", "lang", "correct") if key not in record]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        if not isinstance(record["correct"], bool):
            raise ConfigError(f"{where}: correct is {record['correct']!r}, not true or false")
        rows.append(Judged(str(record["question_id"]), str(record["source_lang"]), str(record["lang"]), record["correct"]))
    return rows


def score_eclektic_file(path: Path, *, seed: int = 0, resamples: int = 1000) -> dict[str, Any]:
    """:func:`eclektic_scores` of a judgements file (what ``babelbench score eclektic`` prints)."""
    return eclektic_scores(read_judgements(path), seed=seed, resamples=resamples)
