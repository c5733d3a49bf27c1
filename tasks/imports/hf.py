"""A folder ``babelbench publish`` wrote — or one downloaded from the hub — read back as a benchmark.

The card's front matter lists the configurations and their Parquet files (huggingface-hub reads it); every row is
an instance of the recipe its ``recipe`` column names (which must be registered here), checked against its
``content_hash`` before anything is written, so a file changed or cut since it was published is refused, naming
the file, the row and the instance.  Each instance keeps the sources the folder named (``instances.sources``),
each item its question as first written (the instance in its source language) and its kind; the benchmark keeps
the folder's licence and citation (from the card and ``croissant.json``), which a later publish repeats.  The
benchmark's name is the folder's unless one is given.  A folder whose hub tags name a recipe with its own kind of
dataset (a CLIR collection: :class:`~tasks.recipe.Publication`) is read by that recipe instead.  See
``docs/publishing.md``, "The round trip".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from huggingface_hub import DatasetCard

from tasks.errors import ConfigError
from tasks.imports.common import DatasetLayout, chosen_langs, langs_text, write_benchmark
from tasks.publish.layout import CARD, CROISSANT, HASH, JSON_COLUMNS, SOURCES, content_hash
from tasks.recipe import RECIPES, Recipe
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord, ItemRecord

#: the columns a row must have (the others are left out of a folder when null in every row)
REQUIRED = ("instance_id", "item_id", "recipe", "setting", "lang", "question", "answer", "source_lang", HASH)


def locate(source: Path, name: str | None) -> tuple[Path, str, str]:
    """The folder, the benchmark's name (the folder's by default) and the import cell."""
    if not (source / CARD).is_file():
        raise ConfigError(f"{source}: not a published dataset folder (no {CARD})")
    chosen = name or source.resolve().name
    return source, chosen, chosen


def config_files(source: Path) -> list[tuple[str, str, Path]]:
    """(configuration, split, Parquet file) of every data file the card lists, in its order."""
    data = DatasetCard.load(source / CARD).data.to_dict()
    configs = data.get("configs")
    if not isinstance(configs, list) or not configs:
        raise ConfigError(f"{source / CARD}: the front matter lists no configs")
    files = []
    for config in configs:
        for entry in config.get("data_files") or []:
            matched = sorted(source.glob(entry["path"]))
            if not matched:
                raise ConfigError(f"{source / CARD}: config {config.get('config_name')!r} names {entry['path']},"
                                  " which matches no file")
            files += [(config.get("config_name"), entry.get("split"), path) for path in matched]
    return files


def data_files(source: Path) -> list[Path]:
    """The Parquet files of every configuration the card lists, in its order."""
    return [path for _, _, path in config_files(source)]


def folder_recipe(source: Path) -> Recipe | None:
    """The recipe the card's hub tags name whose datasets are not benchmarks of instances (it has a
    :class:`~tasks.recipe.Publication`: it reads its own folders), if any."""
    tags = DatasetCard.load(source / CARD).data.to_dict().get("tags") or []
    named = [RECIPES.get(tag) for tag in RECIPES.names() if tag in tags]
    return next((recipe for recipe in named if recipe.publication is not None), None)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of one Parquet file, each checked against its content hash."""
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a cut or foreign file vary
        raise ConfigError(f"{path}: not a readable Parquet file ({exc})") from exc
    for number, row in enumerate(rows, start=1):
        missing = [column for column in REQUIRED if row.get(column) is None]
        if missing:
            raise ConfigError(f"{path} row {number}: no {', '.join(missing)}")
        row.setdefault("documents", [])
        if content_hash(row) != row[HASH]:
            raise ConfigError(f"{path} row {number} (instance {row['instance_id']}): the content does not match its"
                              " content_hash: the file was changed since it was published")
    return rows


def terms(source: Path) -> dict[str, str]:
    """The folder's licence (the card's, and Croissant's URL) and its citation (Croissant's citeAs)."""
    found = {"licence": DatasetCard.load(source / CARD).data.to_dict().get("license")}
    if (source / CROISSANT).is_file():
        croissant = json.loads((source / CROISSANT).read_text(encoding="utf-8"))
        licence = croissant.get("license")
        found |= {"licence_url": licence[0] if isinstance(licence, list) else licence,
                  "citation": croissant.get("citeAs")}
    return {key: value for key, value in found.items() if isinstance(value, str) and value}


def write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """Every instance of every configuration (of the chosen languages), with its items; a folder of a recipe that
    publishes its own kind of dataset is read by that recipe."""
    owner = folder_recipe(source)
    if owner is not None and owner.publication is not None:
        return owner.publication.read(wh, source, name, langs, fp)
    rows = [row for path in data_files(source) for row in read_rows(path)]
    recipes = sorted({row["recipe"] for row in rows})
    if len(recipes) != 1:
        raise ConfigError(f"{source}: one benchmark follows one recipe; its rows name {', '.join(recipes)}")
    RECIPES.get(recipes[0])
    chosen = chosen_langs(sorted({row["lang"] for row in rows}), langs, source)
    kept = [row for row in rows if row["lang"] in chosen]
    instances = [InstanceRecord(
        name, row["instance_id"], row["item_id"], row["recipe"], row["setting"], row["lang"], row["question"],
        row["answer"], row["source_lang"], json.dumps(row["documents"], ensure_ascii=False), row.get("seed") or 0, fp,
        **{column: row.get(column) for column in (*JSON_COLUMNS, "judge_context")},  # JSON columns are JSON text
        sources=None if row.get(SOURCES) is None else json.dumps(row[SOURCES], ensure_ascii=False)) for row in kept]
    # an item as its instances give it: the question where it is asked in its source language, else the first
    written: dict[str, dict[str, Any]] = {}
    for row in kept:
        if row["item_id"] not in written or row["lang"] == row["source_lang"] != written[row["item_id"]]["lang"]:
            written[row["item_id"]] = row
    items = [ItemRecord(name, item_id, row["recipe"], row["source_lang"], f"import:{source.name}", fp,
                        question=row["question"], answer=row["answer"], qtype=row.get("qtype"))
             for item_id, row in sorted(written.items())]
    created = write_benchmark(wh, name, recipes[0], source, fp, instances, items, terms(source))
    return StageOutput(rows=len(instances), message=f"{len(instances)} instances of {len(items)} items in"
                                                    f" {langs_text(created, chosen)}")


#: the recipe of the benchmark is the one its rows name, checked in ``write``
IMPORTER = DatasetLayout("hf", write, locate=locate)
