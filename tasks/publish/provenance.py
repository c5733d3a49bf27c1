"""What a published card says of how a benchmark was made, read from the warehouse: nothing is written by hand.

The stage runs that built it (each build stage's latest run per cell, with the fields it read: models, prompt
templates by hash, parameters), the dumps its text came from, its live window, the quality control, translation
gate and review outcomes per language, the leaderboard as it stands, and its known limitations (cells whose latest
run failed, languages asked for that have no instance, the reasons items were left out).  Everything is sorted,
and nothing here depends on when it is read, so the same warehouse always gives the same card.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.catalog import scope
from tasks.errors import ConfigError
from tasks.llm.prompts import available_templates, recipe_templates, template_hash
from tasks.llm.registry import load_registry
from tasks.recipe import Recipe, recipe
from tasks.warehouse.db import Warehouse

#: the flows whose stages make a benchmark (evaluation reads it)
BUILD_FLOWS = ("qa-build", "translate", "instances", "import")
#: the QC outcomes (``qa_status.qc_status``) that let an item through
QC_PASSED = ("unreviewed", "accepted_review")


@dataclass(frozen=True)
class StageRun:
    """One build stage's latest runs over the benchmark's cells that read the same fields."""

    stage: str
    cells: list[str]
    status: str
    parameters: str  # the fields read, as sorted JSON, prompt templates named
    templates: list[tuple[str, str]]  # (name, sha256)


@dataclass(frozen=True)
class ModelUse:
    """A model that wrote part of the benchmark, with what it did and the terms of what it wrote."""

    name: str
    roles: list[str]
    backend: str
    model: str
    terms: str


@dataclass(frozen=True)
class Provenance:
    """Everything the card and the Croissant metadata say of a benchmark (see the module notes)."""

    benchmark: str
    recipe: Recipe
    langs: list[str]
    origin: str  # the generator, or import:<file>
    updated: str  # the day the benchmark was last written
    imported: Mapping[str, Any]  # the import's recorded source, licence and citation (empty when built here)
    dumps: list[tuple[str, str, str, int]]  # (language, wiki, dump date, documents shown)
    windows: list[tuple[str, str]]
    stages: list[StageRun]
    models: list[ModelUse]
    quality: list[dict[str, Any]]
    gates: list[dict[str, Any]]
    leaderboard: list[dict[str, Any]]
    failed_cells: list[tuple[str, str, str]]
    dropped: list[tuple[str, str]]
    left_out: list[tuple[str, int]]
    unattributed: int


def _benchmark_cells(wh: Warehouse, benchmark: str) -> list[dict[str, Any]]:
    """Each build stage's latest run per cell of ``benchmark`` (cells ``B``, ``B:…``, ``B>…``)."""
    stages = [stage.name for stage in scope(*BUILD_FLOWS)]
    return wh.query_dicts(
        "SELECT stage, cell, status, config, message FROM artifacts WHERE stage IN (SELECT unnest(?::VARCHAR[]))"
        " AND (cell = ? OR starts_with(cell, ? || ':') OR starts_with(cell, ? || '>'))"
        " QUALIFY row_number() OVER (PARTITION BY stage, cell ORDER BY finished_at DESC, artifact_id DESC) = 1"
        " ORDER BY stage, cell", [stages, benchmark, benchmark, benchmark])


def _named(config: Any, names: Mapping[str, str], found: set[tuple[str, str]]) -> Any:
    """``config`` with every template hash replaced by the template's name (noted in ``found``)."""
    if isinstance(config, dict):
        return {key: _named(value, names, found) for key, value in config.items()}
    if isinstance(config, list):
        return [_named(value, names, found) for value in config]
    if isinstance(config, str) and config in names:
        found.add((names[config], config))
        return f"{names[config]} (sha256 {config[:12]})"
    return config


def stage_runs(wh: Warehouse, benchmark: str, recipe_name: str) -> tuple[list[StageRun], list[tuple[str, str, str]]]:
    """The build's stage runs, cells that read the same fields together, and the cells whose latest run failed."""
    names = {template_hash(name): name for name in (*available_templates(), *recipe_templates(recipe_name))}
    grouped: dict[tuple[str, str, str], list[str]] = {}
    templates: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
    failed = []
    for row in _benchmark_cells(wh, benchmark):
        if row["status"] == "failed":
            failed.append((row["stage"], row["cell"], row["message"] or ""))
        found: set[tuple[str, str]] = set()
        config = _named(json.loads(row["config"]) if row["config"] else {}, names, found)
        key = (row["stage"], "failed" if row["status"] == "failed" else "ok",
               json.dumps(config, sort_keys=True, ensure_ascii=False))
        grouped.setdefault(key, []).append(row["cell"])
        templates.setdefault(key, set()).update(found)
    runs = [StageRun(stage, sorted(cells), status, parameters, sorted(templates[(stage, status, parameters)]))
            for (stage, status, parameters), cells in sorted(grouped.items())]
    return runs, failed


def models_used(wh: Warehouse, benchmark: str) -> list[ModelUse]:
    """The models that wrote questions, translated them or screened them, with their registry entries."""
    roles: dict[str, set[str]] = {}
    for name, role in wh.query(
            "SELECT generator, 'wrote questions' FROM qa_items WHERE benchmark = ? AND NOT starts_with(generator, 'import:')"
            " UNION SELECT translator, 'translated' FROM translations WHERE benchmark = ?"
            " UNION SELECT substr(reviewer, 5), 'pre-screened' FROM qa_reviews WHERE benchmark = ?"
            " AND starts_with(reviewer, 'llm:')", [benchmark] * 3):
        roles.setdefault(name, set()).add(role)
    if not roles:
        return []
    registry = {spec.name: spec for spec in load_registry(home=wh.home).models}
    uses = []
    for name in sorted(roles):
        spec = registry.get(name)
        uses.append(ModelUse(name, sorted(roles[name]), spec.backend if spec else "?", spec.model if spec else "?",
                             (spec.terms if spec else None) or "not recorded (set `terms` in the model's registry"
                                                                " entry)"))
    return uses


def quality(wh: Warehouse, benchmark: str) -> list[dict[str, Any]]:
    """Per item language: items, generated ok, passed QC, flagged, and people's review (counts)."""
    return wh.query_dicts(
        "SELECT lang, count(*) AS written, count(*) FILTER (WHERE status = 'ok') AS ok,"
        " count(*) FILTER (WHERE qc_status IN (SELECT unnest(?::VARCHAR[]))) AS passed,"
        " count(*) FILTER (WHERE qc_status = 'flagged') AS flagged,"
        " count(*) FILTER (WHERE reviewer IS NOT NULL) AS reviewed,"
        " count(*) FILTER (WHERE qc_status = 'accepted_review') AS accepted"
        " FROM qa_status WHERE benchmark = ? GROUP BY lang ORDER BY lang", [list(QC_PASSED), benchmark])


def gates(wh: Warehouse, benchmark: str) -> list[dict[str, Any]]:
    """Per target language: items translated, and those whose every field passed the gate."""
    return wh.query_dicts(
        "SELECT tgt_lang AS lang, count(*) AS translated, count(*) FILTER (WHERE passed) AS passed FROM ("
        " SELECT tgt_lang, item_id, bool_and(coalesce(gate = 'pass', FALSE)) AS passed FROM translations"
        " WHERE benchmark = ? GROUP BY ALL) GROUP BY tgt_lang ORDER BY tgt_lang", [benchmark])


def leaderboard(wh: Warehouse, benchmark: str, headline: str) -> list[dict[str, Any]]:
    """The headline metric and arena ratings over all the benchmark's questions, per setting and language."""
    return wh.query_dicts(
        "SELECT setting, lang, model, metric, value, ci_low, ci_high, n, source FROM leaderboards"
        " WHERE benchmark = ? AND subset = 'all' AND (metric = ? OR setting = 'arena')"
        " ORDER BY setting, lang, metric, value DESC NULLS LAST, model", [benchmark, headline])


def dropped_languages(asked: Iterable[str], present: Iterable[str],
                      gate_rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Languages the benchmark was built or translated for that have no instance, with why."""
    gated = {row["lang"]: row for row in gate_rows}
    dropped = []
    for lang in sorted((set(asked) | set(gated)) - set(present)):
        if lang in gated:
            row = gated[lang]
            why = f"no item's translation passed the gate ({row['passed']} of {row['translated']} passed)"
        else:
            why = "no item was accepted in it, nor translated into it"
        dropped.append((lang, why))
    return dropped


def left_out(wh: Warehouse, benchmark: str) -> list[tuple[str, int]]:
    """Why items were left out of the instances (the instances stage's issues), with how many."""
    return [(reason, count) for reason, count in wh.query(
        "SELECT reason, count(*) FROM ingest_issues WHERE stage = 'instances' AND cell = ? GROUP BY reason"
        " ORDER BY 2 DESC, 1", [benchmark])]


def dump_dates(wh: Warehouse, langs: Iterable[str], sources: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str, int]]:
    """(language, wiki, dump date, documents shown) of the shown text, and of each language's current corpus."""
    shown: dict[tuple[str, str, str], int] = {}
    for source in sources:
        if source.get("dump"):
            key = (source["lang"], source["wiki"] or "", source["dump"])
            shown[key] = shown.get(key, 0) + 1
    corpus = wh.query(
        "SELECT d.lang, any_value(f.wiki), f.dump_date FROM documents AS d JOIN dumps AS f ON f.name = d.source"
        " AND f.lang = d.lang WHERE d.lang IN (SELECT unnest(?::VARCHAR[])) GROUP BY d.lang, f.dump_date",
        [sorted(set(langs))])
    for lang, wiki, dump in corpus:
        shown.setdefault((lang, wiki or "", dump), 0)
    return sorted((lang, wiki, dump, count) for (lang, wiki, dump), count in shown.items())


def provenance(wh: Warehouse, benchmark: str, sources: Iterable[Mapping[str, Any]]) -> Provenance:
    """The card's facts of ``benchmark`` (``sources``: every source the published rows name)."""
    found = wh.query("SELECT recipe, langs, generator, config, CAST(CAST(updated_at AS DATE) AS VARCHAR)"
                     " FROM qa_benchmarks WHERE benchmark = ?", [benchmark])
    if not found:
        raise ConfigError(f"benchmark {benchmark!r} is not in the warehouse {Path(wh.home)}")
    recipe_name, asked, origin, config, updated = found[0]
    protocol = recipe(recipe_name)
    present = [lang for (lang,) in wh.query("SELECT DISTINCT lang FROM instances WHERE benchmark = ? ORDER BY 1",
                                            [benchmark])]
    runs, failed = stage_runs(wh, benchmark, recipe_name)
    gate_rows = gates(wh, benchmark)
    sources = list(sources)
    windows = [(str(since), str(until)) for since, until in wh.query(
        "SELECT DISTINCT window_since, window_until FROM qa_items WHERE benchmark = ? AND window_since IS NOT NULL"
        " ORDER BY 1, 2", [benchmark])]
    imported = json.loads(config) if origin.startswith("import:") else {}
    return Provenance(
        benchmark=benchmark, recipe=protocol, langs=present, origin=origin, updated=updated, imported=imported,
        dumps=dump_dates(wh, present, sources), windows=windows, stages=runs, models=models_used(wh, benchmark),
        quality=quality(wh, benchmark), gates=gate_rows, leaderboard=leaderboard(wh, benchmark, protocol.headline),
        failed_cells=failed, dropped=dropped_languages(asked, present, gate_rows),
        left_out=left_out(wh, benchmark), unattributed=sum(1 for source in sources if not source.get("dump")))
