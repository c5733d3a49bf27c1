"""``babelbench publish``: a benchmark (or what a recipe publishes its own way) as a Hugging Face dataset folder,
written atomically.

The folder — Parquet per configuration and split, ``README.md`` and ``croissant.json`` — is written whole into a
staging folder beside ``<out>/<name>`` and swapped in (:func:`~tasks.warehouse.atomic.atomic_folder`), so a
reader never sees half a publish.  Before the swap the folder is checked as its readers will read it: the
Croissant metadata validates (mlcroissant) and every configuration loads with ``datasets`` with the features the
card documents; a folder that fails either is not published.

A name is a benchmark of instances (``qa_benchmarks``), written here, unless a recipe's
:class:`~tasks.recipe.Publication` holds it (a CLIR collection): then the recipe writes the folder's files and
this module checks and swaps them in the same way.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq

from tasks.errors import BabelbenchError, ConfigError
from tasks.publish.card import citation, render_card
from tasks.publish.croissant import write_croissant
from tasks.publish.layout import CARD, FIELDS, data_file
from tasks.publish.provenance import provenance
from tasks.publish.rows import Configuration, configurations, instance_rows, published_rows
from tasks.recipe import recipes
from tasks.warehouse.atomic import atomic_folder
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class Published:
    """Where a dataset was published, the rows of each configuration (all its splits) and how many of the articles
    it names no ingested dump traces."""

    folder: Path
    rows: dict[str, int]
    unattributed: int


def publish(wh: Warehouse, name: str, out: Path, repo: str | None = None) -> Published:
    """Write benchmark (or collection) ``name`` as ``<out>/<name>`` (see the module notes); ``repo``: the hub
    repository it will be pushed to, for the card's links."""
    owners = [r for r in recipes() if r.publication is not None and r.publication.holds(wh, name)]
    if wh.scalar("SELECT count(*) FROM qa_benchmarks WHERE benchmark = ?", [name]):
        if owners:
            raise ConfigError(f"{name!r} names both a benchmark and a {owners[0].card.title} dataset in the warehouse"
                              f" {Path(wh.home)}: publish one of them from a home that holds only it")
        return write_folder(out / name, lambda staging: _benchmark(wh, name, staging, repo))
    if len(owners) > 1:
        raise ConfigError(f"{name!r} is held by the recipes {', '.join(r.name for r in owners)}: publish it from a"
                          " home that holds only one of them")
    if owners:
        publication = owners[0].publication
        assert publication is not None  # the owners are the recipes with one
        return write_folder(out / name, lambda staging: publication.write(wh, name, staging, repo))
    return write_folder(out / name, lambda staging: _benchmark(wh, name, staging, repo))  # says what is missing


def write_folder(target: Path, write: Callable[[Path], tuple[list[Configuration], int]]) -> Published:
    """``write`` the folder's files into a staging folder, check that every configuration loads, swap it in."""
    with atomic_folder(target) as staging:
        parts, unattributed = write(staging)
        rows: dict[str, int] = {}
        for part in parts:
            rows[part.name] = rows.get(part.name, 0) + part.table.num_rows
        check_loads(staging, list(rows))
    return Published(target, rows, unattributed)


def write_parquet(folder: Path, parts: list[Configuration]) -> None:
    """Each configuration's split as its Parquet file under ``folder``."""
    for part in parts:
        path = folder / data_file(part.name, part.split)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(part.table, path)


def _benchmark(wh: Warehouse, benchmark: str, staging: Path, repo: str | None) -> tuple[list[Configuration], int]:
    """A benchmark's files: one row per instance, its card from the warehouse and its Croissant metadata."""
    rows = published_rows(wh, instance_rows(wh, benchmark))
    facts = provenance(wh, benchmark, [source for row in rows for source in row["sources"]])
    parts = configurations(rows, facts.recipe)
    write_parquet(staging, parts)
    (staging / CARD).write_text(render_card(facts, parts, repo), encoding="utf-8")
    write_croissant(staging, facts, parts, {**FIELDS, **facts.recipe.card.fields},
                    citation(benchmark, facts.recipe.card.title, facts.updated, repo),
                    facts.imported.get("licence_url"), repo)
    return parts, facts.unattributed


def check_loads(folder: Path, names: list[str]) -> None:
    """Every configuration loads with ``datasets`` and the features its card documents (a cache inside the folder's
    staging copy, removed before the swap)."""
    cache = folder / ".cache"
    try:
        for name in names:
            datasets.load_dataset(str(folder), name, cache_dir=str(cache))
    except Exception as exc:  # noqa: BLE001 - whatever datasets raises, the folder is not published
        raise BabelbenchError(f"{folder}: configuration {name!r} does not load with datasets: {exc}") from exc
    finally:
        shutil.rmtree(cache, ignore_errors=True)
