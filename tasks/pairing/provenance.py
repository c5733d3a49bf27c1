"""What a published CLIR collection's card says of how it was made, read from the warehouse.

The stage runs behind a collection are found from its rows: each ``clir_qrels`` row carries the fingerprint of
the run that wrote it (a ``qrels`` cell, or an import), and each run's recorded inputs lead to the runs it read —
the ``retrieval`` run of each language whose BM25 hits gave the labels, the ``index`` it searched (backend, k1,
b, …), the ``documents`` it indexed (their dumps).  A collection whose documents were ingested again since, or
whose language was mined again (so the hits its labels came from are gone), is refused with what to rerun: its
card would describe other data than its rows.

The Jenks breaks are derived, not stored: the retrieval stage keeps every hit's BM25 score, and the breaks are a
function of them and of the run's recorded settings, so they are computed here again with the stage's own code
(:func:`~tasks.pairing.labels.label_breaks`).  That they are the breaks actually used is checked, not assumed:
the same code labels the stored scores again, and every stored label must come out the same, or the publish
fails naming the query.  (Storing them would have meant a new column and a new version of the retrieval stage,
so searching every title of every language again, for numbers the warehouse already determines.)

Nothing here depends on when it is read, so the same warehouse always gives the same card.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.catalog import DOCUMENTS, QRELS, RETRIEVAL
from tasks.errors import BabelbenchError, ConfigError
from tasks.pairing.config import SELF_LABEL, ClirConfig
from tasks.pairing.labels import label_breaks, label_ranked
from tasks.stage import current_fingerprint
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class Run:
    """One stage run behind the collection."""

    stage: str
    cell: str
    fingerprint: str
    inputs: dict[str, str]
    config: dict[str, Any]
    day: str  # when it finished (YYYY-MM-DD)


@dataclass(frozen=True)
class LabelCounts:
    """One direction's judgements: queries, rows per label 0–6, and how many of the label-0 rows are padding."""

    src: str
    tgt: str
    queries: int
    labels: list[int]
    padding: int


@dataclass(frozen=True)
class BreakSummary:
    """One language's Jenks breaks over its queries: how many had Jenks classes, and each inner break's median and
    range over those."""

    lang: str
    queries: int
    jenks: int
    fewer: int
    classes: int
    breaks: list[tuple[float, float, float]]  # (median, lowest, highest), from the lowest class's upper bound up


@dataclass(frozen=True)
class CollectionFacts:
    """Everything a collection's card and Croissant metadata say of it (see the module notes)."""

    name: str
    updated: str
    imported: dict[str, Any]  # the import's recorded source, licence, citation, attribution (empty when built here)
    directions: list[tuple[str, str]]
    splits: list[str]
    runs: list[Run]
    labels: list[LabelCounts]
    breaks: dict[str, dict[int, list[float]]]  # language → query → bounds, for the languages mined here
    summaries: list[BreakSummary]
    failed: list[tuple[str, str]]  # (cell, message) of the collection's cells whose latest run failed

    def of_stage(self, stage: str) -> list[Run]:
        return [run for run in self.runs if run.stage == stage]

    @property
    def query_langs(self) -> list[str]:
        return sorted({src for src, _ in self.directions})

    @property
    def doc_langs(self) -> list[str]:
        return sorted({tgt for _, tgt in self.directions})


def holds(wh: Warehouse, name: str) -> bool:
    """Whether the warehouse has qrels of collection ``name``."""
    return bool(wh.scalar("SELECT count(*) FROM (SELECT 1 FROM clir_qrels WHERE collection = ? LIMIT 1)", [name]))


def lineage(wh: Warehouse, fingerprints: Iterable[str]) -> list[Run]:
    """The runs that made ``fingerprints`` and every run they read, each once (its latest computed record)."""
    runs: dict[str, Run] = {}
    wanted, asked = set(fingerprints), set()
    while wanted:
        asked |= wanted
        for stage, cell, fp, inputs, config, day in wh.query(
                "SELECT stage, cell, fingerprint, inputs, config, CAST(CAST(finished_at AS DATE) AS VARCHAR)"
                " FROM artifacts WHERE status = 'computed' AND fingerprint IN (SELECT unnest(?::VARCHAR[]))"
                " QUALIFY row_number() OVER (PARTITION BY fingerprint ORDER BY artifact_id DESC) = 1",
                [sorted(wanted)]):
            runs[fp] = Run(stage, cell, fp, json.loads(inputs) if inputs else {}, json.loads(config) if config else {},
                           day)
        wanted = {fp for run in runs.values() for fp in run.inputs.values()} - asked
    return sorted(runs.values(), key=lambda run: (run.stage, run.cell, run.fingerprint))


def _check_current(wh: Warehouse, name: str, runs: list[Run]) -> None:
    """The documents the collection was built on are the warehouse's current ones, and its mining runs' hits are
    still held (see the module notes)."""
    for run in runs:
        if run.stage == DOCUMENTS.name:
            current = current_fingerprint(wh, DOCUMENTS.name, run.cell)
            if current is None or current[0] != run.fingerprint:
                raise ConfigError(f"collection {name!r}: the {run.cell} documents were ingested again since it was"
                                  " built, so its documents are not those its labels judge: build it again"
                                  f" (`babelbench clir build --name {name} ...`) before publishing")
        if run.stage == RETRIEVAL.name and not wh.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM retrieval_hits WHERE lang = ? AND fingerprint = ? LIMIT 1)",
                [run.cell, run.fingerprint]):
            raise ConfigError(f"collection {name!r}: its {run.cell} labels come from a retrieval run"
                              f" ({run.fingerprint[:12]}) whose hits the warehouse no longer holds ({run.cell} was"
                              f" mined again since, with other settings): build it again (`babelbench clir build"
                              f" --name {name} ...`) before publishing")


def mining_config(run: Run) -> ClirConfig:
    """The CLIR settings a retrieval run read (the rest at their defaults, which it did not read)."""
    return ClirConfig.model_validate({key: value for key, value in run.config.items()
                                      if key in ClirConfig.model_fields})


def query_breaks(wh: Warehouse, run: Run, queries: list[int]) -> dict[int, list[float]]:
    """Per query of ``queries``, the bounds of its label classes under retrieval run ``run`` (see the module notes),
    after checking that the stage's code labels the run's stored scores as they are stored."""
    config = mining_config(run)
    hits = wh.query(
        "SELECT query_page_id, doc_page_id, score, label FROM retrieval_hits WHERE lang = ? AND fingerprint = ?"
        " AND rank IS NOT NULL AND query_page_id IN (SELECT unnest(?::BIGINT[])) ORDER BY query_page_id, rank",
        [run.cell, run.fingerprint, queries])
    if not hits:
        return {query: [] for query in queries}
    query_ids = np.array([row[0] for row in hits], dtype=np.int64)
    order, counts = np.unique(query_ids, return_counts=True)
    is_self = query_ids == np.array([row[1] for row in hits], dtype=np.int64)
    scores = np.array([row[2] for row in hits], dtype=np.float64)
    stored = np.array([row[3] for row in hits], dtype=np.int8)
    names = [f"{run.cell} query {query}" for query in order.tolist()]
    again = label_ranked(scores, counts, is_self, config, names)
    if (again != stored).any():
        at = int(np.argmax(again != stored))
        raise BabelbenchError(
            f"{run.cell} query {query_ids[at]}: its stored label {stored[at]} for document {hits[at][1]} is not the"
            f" {again[at]} its stored score gives under the run's settings {run.config}: the Jenks breaks cannot be"
            f" told; build the collection again")
    bounds = dict(zip(order.tolist(), label_breaks(scores, counts, is_self, config, names), strict=True))
    return {query: bounds.get(query, []) for query in queries}


def summary(lang: str, bounds: dict[int, list[float]], classes: int) -> BreakSummary:
    """A language's breaks over its queries: Jenks applies to a query with at least ``classes`` distinct scores."""
    jenks = [b for b in bounds.values() if len(b) == classes + 1]
    inner = [[b[i] for b in jenks] for i in range(1, classes)]
    return BreakSummary(lang, len(bounds), len(jenks), len(bounds) - len(jenks), classes,
                        [(statistics.median(values), min(values), max(values)) for values in inner] if jenks else [])


def label_counts(wh: Warehouse, name: str) -> list[LabelCounts]:
    """Per direction: queries, rows per label, padding rows."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * (SELF_LABEL + 1))
    padding: dict[tuple[str, str], int] = defaultdict(int)
    for src, tgt, label, rows, pads in wh.query(
            "SELECT src_lang, tgt_lang, label, count(*), count(*) FILTER (WHERE is_pad) FROM clir_qrels"
            " WHERE collection = ? GROUP BY ALL", [name]):
        counts[(src, tgt)][label] += rows
        padding[(src, tgt)] += pads
    queries = {(src, tgt): n for src, tgt, n in wh.query(
        "SELECT src_lang, tgt_lang, count(DISTINCT query_id) FROM clir_qrels WHERE collection = ? GROUP BY ALL",
        [name])}
    return [LabelCounts(src, tgt, queries[(src, tgt)], counts[(src, tgt)], padding[(src, tgt)])
            for src, tgt in sorted(counts)]


def split_order(runs: list[Run], present: Iterable[str]) -> list[str]:
    """The splits present, in the order the build names them (its split_sizes, then full), others after."""
    named = [split for run in runs if run.stage == QRELS.name for split in run.config.get("split_sizes", {})]
    order = list(dict.fromkeys([*named, *ClirConfig().split_sizes, "full"]))
    return sorted(set(present), key=lambda split: (order.index(split) if split in order else len(order), split))


def collection_facts(wh: Warehouse, name: str) -> CollectionFacts:
    """The card's facts of collection ``name`` (see the module notes)."""
    fingerprints = [fp for (fp,) in wh.query("SELECT DISTINCT fingerprint FROM clir_qrels WHERE collection = ?"
                                             " ORDER BY 1", [name])]
    if not fingerprints:
        raise ConfigError(f"collection {name!r} has no qrels to publish (run `babelbench clir build --name {name}`"
                          " or `babelbench import clirmatrix`)")
    runs = lineage(wh, fingerprints)
    _check_current(wh, name, runs)
    written = [run.day for run in runs if run.fingerprint in fingerprints]
    found = wh.query("SELECT config, CAST(CAST(updated_at AS DATE) AS VARCHAR) FROM clir_collections WHERE name = ?",
                     [name])
    recorded = json.loads(found[0][0]) if found else {}
    written += [found[0][1]] if found and not written else []
    if not written:
        raise ConfigError(f"collection {name!r}: no run that wrote its qrels is recorded in the warehouse")
    directions = [(src, tgt) for src, tgt in wh.query(
        "SELECT DISTINCT src_lang, tgt_lang FROM clir_qrels WHERE collection = ? ORDER BY ALL", [name])]
    queries: dict[str, list[int]] = defaultdict(list)
    for lang, query in wh.query("SELECT DISTINCT src_lang, query_id FROM clir_qrels WHERE collection = ?"
                                " ORDER BY ALL", [name]):
        queries[lang].append(query)
    breaks = {run.cell: query_breaks(wh, run, queries[run.cell])
              for run in runs if run.stage == RETRIEVAL.name and run.cell in queries}
    summaries = [summary(lang, breaks[lang], mining_config(run).classes)
                 for lang, run in sorted((run.cell, run) for run in runs if run.stage == RETRIEVAL.name)
                 if lang in breaks]
    failed = [(cell, message or "") for cell, status, message in wh.query(
        "SELECT cell, status, message FROM artifacts WHERE stage = ? AND starts_with(cell, ? || ':')"
        " QUALIFY row_number() OVER (PARTITION BY cell ORDER BY artifact_id DESC) = 1 ORDER BY cell",
        [QRELS.name, name]) if status == "failed"]
    return CollectionFacts(
        name=name, updated=max(written), imported=recorded if recorded.get("imported") else {},
        directions=directions,
        splits=split_order(runs, [s for (s,) in wh.query("SELECT DISTINCT split FROM clir_qrels WHERE collection = ?",
                                                         [name])]),
        runs=runs, labels=label_counts(wh, name), breaks=breaks, summaries=summaries, failed=failed)
