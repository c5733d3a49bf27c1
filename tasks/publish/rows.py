"""A benchmark's instances as the rows of its published folder: one Arrow table per configuration and split.

Every configuration has the same schema (the folder's features): the published columns that are not null in
every row, the sources of each instance and its content hash (:mod:`tasks.publish.layout`).  Rows are sorted by
instance id, so the same warehouse always writes the same files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tasks.errors import ConfigError
from tasks.publish.layout import COLUMNS, HASH, ITEM_COLUMNS, SOURCES, TEST_SPLIT, config_name, content_hash
from tasks.publish.sources import attribute
from tasks.recipe import Recipe
from tasks.warehouse.db import Warehouse

SOURCE_TYPE = pa.list_(pa.struct([("wiki", pa.string()), ("lang", pa.string()), ("page_id", pa.int64()),
                                  ("revision_id", pa.int64()), ("title", pa.string()), ("url", pa.string()),
                                  ("dump", pa.string())]))


@dataclass(frozen=True)
class Configuration:
    """One configuration's split of the folder."""

    name: str
    split: str
    table: pa.Table


#: the type of a key no row fills, where its name says it (any other is a string)
NAMED_TYPES = {"page_id": pa.int64(), "revision_id": pa.int64()}


def _typed(kind: pa.DataType, name: str = "") -> pa.DataType:
    """``kind`` with every null type (a key no row fills) given one: loaders and Croissant need a type."""
    if pa.types.is_null(kind):
        return NAMED_TYPES.get(name, pa.string())
    if pa.types.is_list(kind):
        return pa.list_(_typed(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _typed(f.type, f.name)) for f in kind])
    return kind


def instance_rows(wh: Warehouse, benchmark: str) -> list[dict[str, Any]]:
    """The benchmark's instances with the articles their items were written from, sorted by instance id."""
    rows = wh.query_dicts(
        f"SELECT {', '.join(('q.' if column in ITEM_COLUMNS else 'i.') + column for column in COLUMNS)}, i.sources,"
        " q.documents AS item_documents"
        " FROM instances AS i LEFT JOIN qa_items AS q ON q.benchmark = i.benchmark AND q.item_id = i.item_id"
        " WHERE i.benchmark = ? ORDER BY i.instance_id", [benchmark])
    if not rows:
        raise ConfigError(f"benchmark {benchmark!r} has no instances to publish (run `babelbench instances build"
                          f" --benchmark {benchmark}` first)")
    return rows


def published_rows(wh: Warehouse, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each instance as a published row: its columns (documents as values), sources and content hash."""
    sources = attribute(wh, rows)
    published = []
    for row in rows:
        out = {column: row[column] for column in COLUMNS}
        out["documents"] = json.loads(row["documents"])
        out[SOURCES] = sources[row["instance_id"]]
        out[HASH] = content_hash(row)
        published.append(out)
    return published


def configurations(rows: list[dict[str, Any]], recipe: Recipe) -> list[Configuration]:
    """The rows split by the recipe's ``config_by`` columns, in one schema; a column null in every row is left out
    (documents too, when every instance is closed book)."""
    kept = [column for column in (*COLUMNS, SOURCES, HASH)
            if column in (SOURCES, HASH) or any(row[column] not in (None, []) for row in rows)]
    missing = [column for column in recipe.config_by if column not in kept]
    if missing:
        raise ConfigError(f"recipe {recipe.name!r} names its configurations by {', '.join(missing)}, which its"
                          " instances do not fill")
    inferred = pa.Table.from_pylist([{column: row[column] for column in kept if column != SOURCES} for row in rows])
    schema = pa.schema([pa.field(column, SOURCE_TYPE if column == SOURCES else _typed(inferred.schema.field(column).type))
                        for column in kept])
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(config_name(tuple(str(row[column]) for column in recipe.config_by)), []).append(row)
    return [Configuration(name, TEST_SPLIT, pa.Table.from_pylist([{c: row[c] for c in kept} for row in group], schema))
            for name, group in sorted(groups.items())]
