"""The arena's ratings and surrogate as stored: this run's battles rated per language and overall, with the
judge's statistics and each system's unanswered queries, and the surrogate's report with predicted ratings.

The ratings and the surrogate read only this run's battles: those between the
run's systems in the run's languages.  Battles of earlier runs stay in the
table but are never pooled in.  A ``forfeit`` battle (a system without an
answer on a sampled query) is rated like a verdict: a loss for the system
that had no answer.  The judge's statistics (:func:`tasks.arena.pairwise.judge_agreement`)
count only its own verdicts, with the forfeits and the battles left without a
verdict counted beside them.

On a benchmark built from dated articles, the ratings over all languages are
also fitted per window (``subset`` ``window:after_cutoff`` / ``window:before_cutoff``)
on the battles whose question is in that window for both systems, relative to
each one's knowledge cutoff (:func:`battle_window`); a system without a cutoff
has no window ratings.  See ``docs/live-benchmarks.md``, "The arena by window".
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from tasks.arena.bradley_terry import Ties, ahead, rateable, tournaments
from tasks.arena.pairwise import OrderedVerdict, agreement_text, judge_agreement
from tasks.arena.rating import DEFAULT_METHOD, RATING_METHODS
from tasks.arena.surrogate import feature_cube, surrogate
from tasks.arena.table import rating_order
from tasks.features.compute import missing_features
from tasks.llm import load_registry
from tasks.metrics.windows import instance_windows, window_subset
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse, upsert

RATED = ("ok", "forfeit")  # the battles that have a winner (or a tie)
STATUSES = (*RATED, "call_failed", "parse_failed", "skipped_budget")  # every battle's status (sql/017)
RATING_COLUMNS = ("(benchmark, judge, lang, model, rating, ci_low, ci_high, rank_low, rank_high, n_battles, ties,"
                  " consistency, first_position_rate, fingerprint, predicted, unbounded, failed_queries,"
                  " judged_pairs, decisive_verdicts, order_flips, forfeits, no_verdict, subset)")
#: what the judge's statistics (:func:`judge_agreement`) count, in the order of their columns
AGREEMENT = ("judged_pairs", "decisive_verdicts", "order_flips", "forfeits", "no_verdict")
#: this run's battles: rated ones between its systems, in its languages
RUN_BATTLES = ("SELECT instance_id, lang, model_a, model_b, winner, status FROM battles"
               " WHERE benchmark = ? AND judge = ? AND list_contains(?, status) AND list_contains(?, model_a)"
               " AND list_contains(?, model_b) AND list_contains(?, lang) ORDER BY ALL")
ALL = "all"
#: the windows rated apart (a question in the ``unknown`` window, or in different windows for the two systems,
#: says nothing about memorisation: its battles enter only the overall ratings)
RATED_WINDOWS = ("after_cutoff", "before_cutoff")


def run_verdicts(wh: Warehouse, benchmark: str, judge: str, models: list[str], langs: list[str],
                 statuses: tuple[str, ...] = RATED) -> list[OrderedVerdict]:
    """This run's battles with one of ``statuses`` (by default the rated ones; see the module notes)."""
    systems = sorted(set(models))
    return [OrderedVerdict(r["instance_id"], r["lang"], r["model_a"], r["model_b"], r["winner"], r["status"])
            for r in wh.query_dicts(RUN_BATTLES, [benchmark, judge, list(statuses), systems, systems, sorted(langs)])]


def _failed_queries(verdicts: list[OrderedVerdict]) -> dict[tuple[str, str], int]:
    """(lang, system) → how many sampled queries the system had no answer on, from the forfeits (the winner is the
    system that answered; a tie, neither did); lang ``ALL`` counts every language's."""
    missing: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for v in verdicts:
        if v.status == "forfeit":
            for system in {"a": (v.second,), "b": (v.first,), "tie": (v.first, v.second)}[v.verdict or ""]:
                missing[(v.lang, system)].add((v.lang, v.query_id))
                missing[(ALL, system)].add((v.lang, v.query_id))
    return {key: len(queries) for key, queries in missing.items()}


def system_windows(wh: Warehouse, benchmark: str, models: list[str]) -> dict[str, dict[str, str]] | None:
    """System with a knowledge cutoff in the registry → instance id → its window relative to that cutoff; None when
    the benchmark has no dated articles (nothing to split). A system without a cutoff is left out."""
    registry = load_registry(home=wh.home)
    cutoffs = {model: registry.get(model).cutoff_day for model in sorted(set(models)) if model in registry.names}
    return instance_windows(wh, benchmark, {model: cutoff for model, cutoff in cutoffs.items() if cutoff is not None})


def battle_window(verdict: OrderedVerdict, windows: Mapping[str, Mapping[str, str]]) -> str | None:
    """The window whose ratings a battle enters: its question's, when that is one of ``RATED_WINDOWS`` for both
    systems (``windows``: system → instance id → window; a system without a cutoff is not in it); None otherwise."""
    first = windows.get(verdict.first, {}).get(verdict.query_id)
    return first if first in RATED_WINDOWS and windows.get(verdict.second, {}).get(verdict.query_id) == first else None


def rate(wh: Warehouse, benchmark: str, judge: str, models: list[str], langs: list[str], ties: Ties, bootstrap: int,
         seed: int, fp: str, windows: Mapping[str, Mapping[str, str]] | None = None) -> StageOutput:
    """Ratings per language and over all languages of this run's battles, and over all languages per window when
    ``windows`` (system with a cutoff → instance id → window; None: a benchmark without dated articles) is given,
    with the judge's consistency and each system's failed queries; replaces the judge's ratings of the benchmark."""
    verdicts = run_verdicts(wh, benchmark, judge, models, langs, STATUSES)
    failed = _failed_queries(verdicts)
    groups: dict[tuple[str, str], list[OrderedVerdict]] = defaultdict(list)  # (lang, subset) → its battles
    for verdict in verdicts:
        groups[(verdict.lang, ALL)].append(verdict)
        groups[(ALL, ALL)].append(verdict)
        if windows is not None and (window := battle_window(verdict, windows)) is not None:
            groups[(ALL, window_subset(window))].append(verdict)
    method = RATING_METHODS.get(DEFAULT_METHOD)
    rows, skipped, notes = [], [], []
    for (lang, subset), group in sorted(groups.items()):
        battles = [verdict.battle() for verdict in group if verdict.status in RATED]
        agreement = judge_agreement(group)
        if (lang, subset) == (ALL, ALL):
            notes.append(agreement_text(agreement))
        if not method.rateable(battles, ties):  # no rated battle, or only ties (verdicts, order flips) to drop
            skipped.append(lang if subset == ALL else subset)
            continue
        result = method.ratings(battles, bootstrap=bootstrap, seed=seed, ties=ties)
        group_failed = _failed_queries(group)  # its (ALL, system) counts are the group's
        rows += [[benchmark, judge, lang, model, m["rating"], m["ci_low"], m["ci_high"], m["rank_low"], m["rank_high"],
                  result["n_battles"], ties, agreement["consistency"], agreement["first_position_rate"], fp, False,
                  m["unbounded"], group_failed.get((ALL, model), 0), *(agreement[key] for key in AGREEMENT), subset]
                 for model, m in result["models"].items()]
        if (lang, subset) == (ALL, ALL):
            unbounded = sorted(model for model, m in result["models"].items() if m["rating"] is None)
            notes += [f"unbounded (never lost or never won): {', '.join(unbounded)}"] if unbounded else []
    if windows is not None:
        by_window = {window: len(groups.get((ALL, window_subset(window)), [])) for window in RATED_WINDOWS}
        unknown = sorted(set(models) - set(windows))
        notes.append("by window (question there for both systems): " + ", ".join(
            f"{window} {count} battles" for window, count in by_window.items())
            + (f"; unknown cutoff, no window ratings: {', '.join(unknown)}" if unknown else ""))
    with wh.transaction() as cur:
        cur.execute("DELETE FROM arena_ratings WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        if rows:
            cur.executemany(f"INSERT INTO arena_ratings {RATING_COLUMNS} VALUES ({', '.join('?' * len(rows[0]))})",
                            rows)
    missing = ", ".join(f"{system} {count}" for (lang, system), count in sorted(failed.items()) if lang == ALL)
    notes = ([f"nothing decisive to rate in {', '.join(skipped)}"] if skipped else []) + notes + (
        [f"no answer (a loss against each system that answered) on: {missing} queries"] if missing else [])
    rated = sum(verdict.status in RATED for verdict in verdicts)
    return StageOutput(rows=len(rows), message=f"{rated} battles rated in {len(groups)} groups"
                                               + "".join(f"; {note}" for note in notes))


def fit_surrogate(wh: Warehouse, benchmark: str, judge: str, models: list[str], langs: list[str], ties: Ties,
                  bootstrap: int, seed: int, fp: str) -> StageOutput:
    """The surrogate's report on this run's battles, and predicted ratings for systems with features but no
    battles."""
    battles = [verdict.battle() for verdict in run_verdicts(wh, benchmark, judge, models, langs)]
    rows = wh.query("SELECT i.lang, f.instance_id, f.model, f.feature, f.value FROM features f"
                    " JOIN instances i USING (benchmark, instance_id) WHERE f.benchmark = ? AND f.status = 'ok'",
                    [benchmark])
    fitted = tournaments(battles, bootstrap=bootstrap, seed=seed, ties=ties) if rateable(battles, ties) else None
    rated = [] if fitted is None else [m for m, r in zip(fitted.models, fitted.rating, strict=True) if np.isfinite(r)]
    if fitted is None or len(rated) < 3 or not rows:
        with wh.transaction() as cur:
            cur.execute("DELETE FROM surrogate_reports WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        return StageOutput(rows=0, message=f"not fitted: needs features and finite ratings of at least 3 systems"
                                           f" (has {len(rated)})")
    lang_ratings: dict[str, dict[str, float]] = defaultdict(dict)
    judged = wh.query_dicts("SELECT lang, model, rating, unbounded FROM arena_ratings WHERE benchmark = ?"
                            " AND judge = ? AND NOT predicted AND subset = 'all'", [benchmark, judge])
    for row in judged:
        if row["rating"] is not None and row["lang"] != ALL:
            lang_ratings[row["lang"]][row["model"]] = row["rating"]
    overall = [rating_order(row) for row in judged if row["lang"] == ALL]  # an unbounded-high system is ahead
    cube = feature_cube(rows)
    report = surrogate(cube, fitted, battles, dict(lang_ratings), seed=seed)
    report["missing"] = missing_features(wh, benchmark, list(cube.systems))
    predicted_rows = []
    for model, p in report["predicted"].items():
        rank = 1 + sum(ahead(rating, p["rating"]) for rating in overall)
        predicted_rows.append([benchmark, judge, ALL, model, p["rating"], p["ci_low"], p["ci_high"], rank, rank, 0, ties,
                               None, None, fp, True, None, None, *(None for _ in AGREEMENT), ALL])
    with wh.transaction() as cur:
        cur.execute("DELETE FROM arena_ratings WHERE benchmark = ? AND judge = ? AND predicted", [benchmark, judge])
        if predicted_rows:
            cur.executemany(f"INSERT INTO arena_ratings {RATING_COLUMNS} VALUES"
                            f" ({', '.join('?' * len(predicted_rows[0]))})", predicted_rows)
        upsert(cur, "surrogate_reports", [[benchmark, judge, json.dumps(report), fp]])
    loso = report["leave_systems_out"]
    validation = (f"not validated: {report['not_validated']}" if loso is None else
                  f"leave-systems-out R² {'undefined' if loso['r2'] is None else format(loso['r2'], '.3f')},"
                  f" Kendall τ {loso['kendall_tau']}")
    gaps = "; missing features: " + ", ".join(
        f"{system} {sum(counts.values())}" for system, counts in report["missing"].items()) if report["missing"] else ""
    return StageOutput(rows=len(predicted_rows), message=f"{validation}; {len(predicted_rows)} predicted{gaps}")
