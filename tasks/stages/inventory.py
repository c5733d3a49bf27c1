"""What a home's warehouse already holds, as the flows need to know it before they compose a run: the languages,
models and cells of a benchmark, its collections and benchmarks, the parameters of earlier runs, and the few
records a flow keeps (a benchmark's definition, the languages a backfill added).

Flows only compose (``docs/development.md``, "Layers"): every question they ask the warehouse is a function here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tasks.errors import ConfigError
from tasks.recipe import RECIPES
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import upsert_benchmark


def response_languages(wh: Warehouse, benchmark: str) -> list[str]:
    """The languages ``benchmark`` has stored responses in, sorted."""
    return [lang for (lang,) in wh.query("SELECT DISTINCT lang FROM responses WHERE benchmark = ? ORDER BY 1",
                                         [benchmark])]


def instance_languages(wh: Warehouse, benchmark: str) -> set[str]:
    """The languages ``benchmark`` has instances in."""
    return {lang for (lang,) in wh.query("SELECT DISTINCT lang FROM instances WHERE benchmark = ?", [benchmark])}


def instance_cells(wh: Warehouse, benchmark: str) -> list[tuple[str, str]]:
    """``benchmark``'s (setting, language) cells, sorted."""
    return [tuple(row) for row in wh.query("SELECT DISTINCT setting, lang FROM instances WHERE benchmark = ?"
                                           " ORDER BY ALL", [benchmark])]


def arena_langs(wh: Warehouse, benchmark: str, models: list[str], langs: list[str] | None) -> list[str]:
    """The languages an arena on ``benchmark`` judges (``langs``, or every language with responses), refusing a
    benchmark without responses, a language without any and a system never asked (one that was asked and failed
    everywhere enters: it loses every battle)."""
    known = response_languages(wh, benchmark)
    if not known:
        raise ConfigError(f"benchmark {benchmark!r} has no responses; run `babelbench eval --benchmark {benchmark}"
                          " --models …` first")
    unknown = sorted(set(langs or ()) - set(known))
    if unknown:
        raise ConfigError(f"benchmark {benchmark!r} has no responses in {', '.join(unknown)}")
    asked = {model for (model,) in wh.query("SELECT DISTINCT model FROM responses WHERE benchmark = ?", [benchmark])}
    silent = sorted(set(models) - asked)
    if silent:
        raise ConfigError(f"no responses of {', '.join(silent)} on {benchmark!r}; run `babelbench eval --benchmark"
                          f" {benchmark} --models {','.join(silent)}` first")
    return langs or known


def overall_ratings(wh: Warehouse, benchmark: str, judge: str | None = None, models: list[str] | None = None, *,
                    windows: bool = False) -> list[dict[str, Any]]:
    """The arena's ratings over all languages, as stored: ``judge``'s (default: every judge's, by judge), only
    ``models``' when given; those of every battle (subset ``all``), and with ``windows`` also those per
    knowledge-cutoff window."""
    return wh.query_dicts("SELECT * FROM arena_ratings WHERE benchmark = ? AND lang = 'all' AND (? OR subset = 'all')"
                          " AND (? IS NULL OR judge = ?) AND (? IS NULL OR list_contains(?, model))"
                          " ORDER BY judge, subset",
                          [benchmark, windows, judge, judge, models, models])


def leaderboard_rows(wh: Warehouse, benchmark: str, models: list[str] | None = None) -> list[dict[str, Any]]:
    """The benchmark's leaderboard, best model first within each (setting, language, subset, metric)."""
    where = " AND list_contains(?, model)" if models else ""
    return wh.query_dicts(
        "SELECT benchmark, setting, lang, subset, model, metric, value, ci_low, ci_high, n, answered, failed,"
        " judge_failed, mode, judges FROM leaderboard"
        f" WHERE benchmark = ?{where}"
        " ORDER BY setting, lang = 'all' DESC, lang, subset = 'all' DESC, subset, metric, value DESC NULLS LAST, model",
        [benchmark, models] if models else [benchmark])


def require_results(wh: Warehouse, benchmark: str) -> None:
    """Refuse a report on a benchmark with neither a leaderboard nor arena ratings."""
    if not wh.scalar("SELECT count(*) FROM leaderboards WHERE benchmark = ?", [benchmark]):
        raise ConfigError(f"benchmark {benchmark!r} has no leaderboard or arena ratings yet; run `babelbench eval` or"
                          " `babelbench arena` first")


@dataclass(frozen=True)
class FlowRun:
    """One recorded run of a flow: its id, its status (``running``, ``completed``, ``failed``, ``crashed``) and its
    parameters."""

    run_id: str
    status: str
    params: dict[str, Any]


def flow_runs(wh: Warehouse, flow: str) -> list[FlowRun]:
    """Every recorded run of ``flow`` that has parameters, newest first."""
    return [FlowRun(run_id, status, json.loads(raw)) for run_id, status, raw in wh.query(
        "SELECT run_id, status, params FROM runs WHERE flow = ? AND params IS NOT NULL ORDER BY started_at DESC", [flow])]


def flow_run_params(wh: Warehouse, flow: str) -> list[dict[str, Any]]:
    """The parameters of every recorded run of ``flow``, newest first."""
    return [run.params for run in flow_runs(wh, flow)]


def collections(wh: Warehouse) -> list[tuple[str, list[str]]]:
    """Every CLIR collection with its languages, by name."""
    return [tuple(row) for row in wh.query("SELECT name, langs FROM clir_collections ORDER BY name")]


def benchmarks(wh: Warehouse) -> list[tuple[str, str, list[str], str]]:
    """Every QA benchmark's (name, recipe, languages, generator), by name."""
    return [tuple(row) for row in wh.query("SELECT benchmark, recipe, langs, generator FROM qa_benchmarks"
                                           " ORDER BY benchmark")]


def register_benchmark(wh: Warehouse, name: str, recipe: str, langs: list[str], generator: str,
                       params: dict[str, Any]) -> None:
    """Record a built benchmark's definition so the translation and instance flows can find it.

    Languages a backfill added to the benchmark (translation targets) stay when the build runs again with its
    original languages — a scheduled rebuild must not drop them.
    """
    RECIPES.require(recipe)
    with wh.transaction() as cur:
        known = cur.execute("SELECT langs FROM qa_benchmarks WHERE benchmark = ?", [name]).fetchall()
        added = [lang for lang in (known[0][0] if known else []) if lang not in langs]
        upsert_benchmark(cur, name, recipe, [*langs, *added], generator, json.dumps(params))


def add_benchmark_languages(wh: Warehouse, benchmark: str, langs: list[str]) -> None:
    """Record new target languages in the benchmark's definition, where instance assembly reads its languages."""
    with wh.transaction() as cur:
        cur.execute("UPDATE qa_benchmarks SET langs = list_concat(langs, ?) WHERE benchmark = ?", [langs, benchmark])
