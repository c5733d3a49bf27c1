"""Typed records of the benchmark tables, written by column name: a benchmark, its items, its instances.

Every writer of ``qa_benchmarks``, ``qa_items`` and ``instances`` — the
built-in recipes' and any plugin's — goes through these records, so a
migration that adds a column (with a default or NULL) breaks none of them,
and a recipe's own data has one typed home, ``extra`` (JSON in the schema the
recipe declares, :attr:`tasks.recipe.Recipe.extra`).  JSON columns are held
as JSON text, as the writers serialise them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from datetime import date
from typing import Any

import duckdb

from tasks.warehouse.db import insert_rows, upsert


@dataclass(frozen=True)
class ItemRecord:
    """One generated (or imported) question of a benchmark, with its parse status."""

    benchmark: str
    item_id: str
    recipe: str
    lang: str
    generator: str
    fingerprint: str
    question: str | None = None
    answer: str | None = None
    qtype: str | None = None
    context: str | None = None
    documents: str = "[]"  # [{lang, page_id, title}] the question was written from
    used_pairs: str | None = None
    status: str = "ok"
    reason: str | None = None
    request_hash: str | None = None
    window_since: date | None = None
    window_until: date | None = None
    extra: str | None = None


@dataclass(frozen=True)
class InstanceRecord:
    """What a model is shown for one question in one setting and language, and what scores its answer."""

    benchmark: str
    instance_id: str
    item_id: str
    recipe: str
    setting: str
    lang: str
    question: str
    answer: str
    source_lang: str
    documents: str
    seed: int
    fingerprint: str
    prompt_hint: str | None = None
    judge_context: str | None = None
    gold: str | None = None
    extra: str | None = None
    sources: str | None = None  # where each document's text comes from, as a published folder named it


def upsert_benchmark(cur: Any, benchmark: str, recipe: str, langs: list[str], generator: str, config: str) -> None:
    """Write a benchmark's definition, replacing the one of that name whole (``config``: JSON text); stamped now.
    These are ``qa_benchmarks``' leading columns in order (``sql/027_open_recipes.sql``), ``updated_at`` last."""
    upsert(cur, "qa_benchmarks", [[benchmark, recipe, langs, generator, config]], then="now()")


def insert_records(cur: duckdb.DuckDBPyConnection, table: str, records: Sequence[Any]) -> None:
    """Insert ``records`` (instances of one record class) into ``table`` by column name, in one statement."""
    if not records:
        return
    columns = [f.name for f in fields(type(records[0]))]
    insert_rows(cur, table, [astuple(record) for record in records], columns=columns)
