"""What a babelbench home holds, reduced to what must not depend on how the runs went: for comparing homes.

:func:`table_snapshot` hashes every table and view of the warehouse (row count
and an order-independent hash of its rows, :mod:`tasks.warehouse.digest`); :func:`lake_problems` and
:func:`lake_files` check the Parquet lake against the catalog;
:func:`index_snapshot` describes the embedded search indexes. Two homes that
ran the same commands — one interrupted and rerun, one not — must agree on all
of them.

What legitimately differs between two such homes, and is therefore left out
(every column is named here; a new wall-clock column in the schema makes
:func:`table_snapshot` fail until it is listed):

* wall-clock times — ``*_at`` columns, ``artifacts.seconds``, ``latency_s``:
  when and how fast something ran, not what it produced;
* identities minted per run or per home — ``runs.run_id``, the Prefect and
  MLflow run ids, ``runs.pid``/``host``, ``artifacts.run_id``/``artifact_id``
  (a sequence), ``warehouse_info.warehouse_id``, ``evaluations.mlflow_run_id``;
* ``dumps.mtime_ns``: the time the dump file was written to this home;
* the random write-attempt suffix of a lake shard's folder
  (``<fingerprint>-<8 hex>/``), which keeps a recompute from writing over the
  files the current view still reads;
* logs rather than state: ``artifacts`` records every stage run, so a killed
  run and its rerun leave more rows (a cell computed before the kill is
  ``cached`` in the rerun). What the log must agree on is each cell's current
  output — the latest ``computed`` row's fingerprint, inputs, config, rows,
  issues and message — and that is what is compared. Its ``code_version``
  (the checkout's commit, recorded and never hashed into a fingerprint) is
  left out, as in ``runs``: a commit landing between the two runs changes it.
  ``stage_runs`` is a view of that log (latest row of any status) and is left
  out for the same reason. ``runs`` is compared as its flows and statuses,
  without the ``crashed`` rows that only a killed run leaves.
* ``runs.params`` and ``runs.message`` hold the home's path and free text; the
  home's own path is written ``<home>`` wherever it appears.
* the last bits of a float: values are compared to 12 significant digits, since
  a language detector's probabilities (``responses.target_prob`` …) differ in
  their 17th digit between two processes that detect the same text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tasks.warehouse import digest
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES

#: table → columns left out of the comparison (see the module docstring for why)
EXCLUDED: dict[str, set[str]] = {
    "artifacts": {"artifact_id", "run_id", "started_at", "finished_at", "seconds"},
    "runs": {"run_id", "started_at", "finished_at", "prefect_flow_run_id", "mlflow_run_id", "pid", "host", "params",
             "message", "code_version"},
    "dumps": {"registered_at", "mtime_ns"},
    "lake_shards": {"registered_at"},
    "llm_calls": {"created_at", "latency_s"},
    "responses": {"latency_s"},
    "schema_migrations": {"applied_at"},
    "plugin_migrations": {"applied_at"},
    "warehouse_info": {"warehouse_id", "created_at"},
    "clir_collections": {"updated_at"},
    "qa_benchmarks": {"updated_at"},
    "qa_reviews": {"decided_at"},
    "evaluations": {"created_at", "mlflow_run_id"},
    "stage_runs": {"finished_at"},
    "document_dates": {"revised_at"},  # not wall-clock: documents_raw.timestamp, compared there
    "commit_guards": {"written_at"},  # when a DuckLake writer last took a guard (empty on the embedded warehouse)
}
#: tables and views that are logs of runs, compared through a projection of their state instead
PROJECTED = {
    "artifacts": "SELECT stage, stage_version, cell, fingerprint, inputs, config, rows, issues, message"
                 " FROM artifacts WHERE status = 'computed'"
                 " QUALIFY row_number() OVER (PARTITION BY stage, cell ORDER BY artifact_id DESC) = 1",
    "runs": "SELECT flow, status FROM runs WHERE status <> 'crashed'",
    "lake_shards": "SELECT table_name, cell, fingerprint, regexp_replace(path, '-[0-9a-f]{8}/', '/') AS path, rows"
                   " FROM lake_shards",
}
SKIPPED = {"stage_runs"}
#: what differs between the two warehouse backends by design, left out when comparing a DuckLake with an embedded
#: warehouse: the embedded lake's shard catalog (a DuckLake holds the rows itself), the rows DuckLake writers rewrite
#: to make their commits conflict, a DuckLake's tables behind the lake views (compared through the views), and where
#: the lake is recorded (an embedded home's own lake is NULL, so the home can move; a DuckLake's is its URL)
ACROSS_BACKENDS = {"lake_shards", "commit_guards"}
ACROSS_BACKENDS_COLUMNS = {"warehouse_info": {"lake"}}
CELLS_TABLES = re.compile(r"__cells$")
_WALL_CLOCK = re.compile(r"TIMESTAMP|_at$|seconds|latency")
SHARD_DIR = re.compile(r"-[0-9a-f]{8}(?=/)")


def _rounded(value: Any) -> Any:
    """Floats to 12 significant digits (in lists and structs too)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, (list, tuple)):
        return type(value)(_rounded(v) for v in value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def table_snapshot(home: Path, across_backends: bool = False,
                   projected: dict[str, str] | None = None) -> dict[str, tuple[int, str]]:
    """Every table and view of the home's warehouse → (row count, content digest: :mod:`tasks.warehouse.digest`);
    ``across_backends``: without what differs between an embedded warehouse and a DuckLake by design
    (:data:`ACROSS_BACKENDS`); ``projected``: tables compared through other queries than :data:`PROJECTED`'s."""
    snapshot: dict[str, tuple[int, str]] = {}
    skipped = SKIPPED | (ACROSS_BACKENDS if across_backends else set())
    projections = PROJECTED | (projected or {})

    def line(row: tuple) -> str:
        return repr(_rounded(row)).replace(str(home), "<home>")

    with Warehouse(home, read_only=True) as wh:
        for table in digest.tables(wh):
            if table in skipped or (across_backends and CELLS_TABLES.search(table)):
                continue
            if table in projections:
                snapshot[table] = digest.query_digest(wh, projections[table], line)
                continue
            columns = digest.columns(wh, table)
            excluded = EXCLUDED.get(table, set()) | (ACROSS_BACKENDS_COLUMNS.get(table, set()) if across_backends else set())
            unlisted = [name for name, kind in columns if name not in excluded and _WALL_CLOCK.search(f"{kind} {name}")]
            assert not unlisted, f"{table}: wall-clock column(s) {unlisted} not listed in tests/home_snapshot.EXCLUDED"
            kept = [name for name, _ in columns if name not in excluded]
            snapshot[table] = digest.query_digest(wh, digest.select_columns(table, kept), line)
    return snapshot


def crashed_runs(home: Path) -> list[str]:
    """The flows of the runs found dead by a later start (a killed process leaves one each)."""
    with Warehouse(home, read_only=True) as wh:
        return [flow for (flow,) in wh.query("SELECT flow FROM runs WHERE status = 'crashed' ORDER BY started_at")]


def lake_problems(home: Path) -> list[str]:
    """What is wrong with the lake: a Parquet file the catalog does not list (an orphan), a listed one that is
    missing, a temp file left by a write. Empty when the lake is exactly what ``lake_shards`` says."""
    lake = home / "lake"
    with Warehouse(home, read_only=True) as wh:
        listed = {path for (path,) in wh.query("SELECT path FROM lake_shards")}
    # the catalogued tables' folders (beside them: ``_empty`` shards, the dense ranker's embedding cache)
    on_disk = {str(p.relative_to(lake)) for table in LAKE_TABLES for p in (lake / table).rglob("*") if p.is_file()}
    problems = [f"orphan file (not in lake_shards): {p}" for p in sorted(on_disk - listed)]
    problems += [f"listed in lake_shards but missing: {p}" for p in sorted(listed - on_disk)]
    return problems


def lake_files(home: Path) -> set[str]:
    """Every file under ``lake/``, relative, the write attempt's random folder suffix removed."""
    lake = home / "lake"
    return {SHARD_DIR.sub("", str(p.relative_to(lake))) for p in lake.rglob("*") if p.is_file()}


def index_snapshot(home: Path, queries: dict[str, list[str]], k: int = 10) -> dict[str, Any]:
    """The embedded indexes: published names, files, manifests (home path as ``<home>``), document ids, and the
    hits of ``queries`` (lang → query texts) on every published index of that language; plus what is left over
    (folders no published index points at)."""
    import numpy as np

    from tasks.index.base import IndexConfig, read_info
    from tasks.index.registry import get_backend

    root = home / "indexes" / "tantivy"
    result: dict[str, Any] = {"leftovers": []}
    if not root.exists():
        return result
    for lang_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        published = sorted(p for p in lang_dir.iterdir() if p.is_symlink())
        targets = {p.resolve() for p in published}
        result["leftovers"] += [str(p.relative_to(home)) for p in lang_dir.iterdir()
                                if not p.is_symlink() and p.resolve() not in targets]
        for link in published:
            data = link.resolve()
            info = read_info(link)
            key = f"{lang_dir.name}/{link.name}"
            hits = get_backend("tantivy").search(link, lang_dir.name, queries.get(lang_dir.name, []), k,
                                                 IndexConfig.model_validate(info.config.model_dump()))
            result[key] = {
                "files": sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()),
                "manifest": info.model_dump_json().replace(str(home), "<home>"),
                "doc_ids": np.load(data / "doc_ids.npy").tolist(),
                "hits": [[(doc, round(score, 5)) for doc, score in row] for row in hits],
            }
    return result
