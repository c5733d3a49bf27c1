"""``babelbench publish``: a benchmark of the warehouse as a Hugging Face dataset folder, written atomically.

The folder — Parquet per configuration and split, ``README.md`` and ``croissant.json`` — is written whole into a
staging folder beside ``<out>/<benchmark>`` and swapped in (:func:`~tasks.warehouse.atomic.atomic_folder`), so a
reader never sees half a publish.  Before the swap the folder is checked as its readers will read it: the
Croissant metadata validates (mlcroissant) and every configuration loads with ``datasets`` with the features the
card documents; a folder that fails either is not published.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq

from tasks.errors import BabelbenchError
from tasks.publish.card import citation, render_card
from tasks.publish.croissant import write_croissant
from tasks.publish.layout import CARD, FIELDS, data_file
from tasks.publish.provenance import provenance
from tasks.publish.rows import configurations, instance_rows, published_rows
from tasks.warehouse.atomic import atomic_folder
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class Published:
    """Where a benchmark was published, and the rows of each configuration."""

    folder: Path
    rows: dict[str, int]
    unattributed: int


def publish_benchmark(wh: Warehouse, benchmark: str, out: Path, repo: str | None = None) -> Published:
    """Write ``benchmark`` as ``<out>/<benchmark>`` (see the module notes); ``repo``: the hub repository it will be
    pushed to, for the card's links."""
    rows = published_rows(wh, instance_rows(wh, benchmark))
    facts = provenance(wh, benchmark, [source for row in rows for source in row["sources"]])
    parts = configurations(rows, facts.recipe)
    target = out / benchmark
    with atomic_folder(target) as staging:
        for part in parts:
            path = staging / data_file(part.name, part.split)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(part.table, path)
        (staging / CARD).write_text(render_card(facts, parts, repo), encoding="utf-8")
        write_croissant(staging, facts, parts, {**FIELDS, **facts.recipe.card.fields}, facts.recipe.card.summary,
                        citation(facts, repo), facts.imported.get("licence_url"), repo)
        check_loads(staging, [part.name for part in parts])
    return Published(target, {part.name: part.table.num_rows for part in parts}, facts.unattributed)


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
