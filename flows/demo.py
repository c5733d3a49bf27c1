"""The offline demo: build the bundled sample mirror, run the pipeline on it, say where to look."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flows.corpus import CorpusParams, corpus_flow
from tasks.sample.mirror import build_sample_mirror
from tasks.tracking import tracking_uri
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class DemoReport:
    rows: list[dict]
    text: str


def run_demo(home: Path) -> DemoReport:
    """Everything on embedded defaults: a file:// mirror, the DuckDB warehouse, a local MLflow store."""
    mirror = build_sample_mirror(home / "sample-mirror")
    rows = corpus_flow(CorpusParams(langs=list(mirror.langs), source=mirror.root.as_uri(), home=str(home), progress=False))
    with Warehouse(home) as wh:
        columns, summary = wh.query_with_columns("SELECT * FROM corpus_summary")
    table = "\n".join(["  " + "  ".join(f"{c:>14}" for c in columns)] + ["  " + "  ".join(f"{v!s:>14}" for v in row) for row in summary])
    text = f"""
Corpus built from the bundled sample ({', '.join(mirror.langs)}, dump date {mirror.date}):
{table}

Where to look:
  warehouse   {home / 'warehouse.duckdb'}
              babelbench --home {home} sql "SELECT * FROM corpus_summary"
              babelbench --home {home} sql "SELECT stage, cell, status, rows, issues FROM stage_runs"
  MLflow UI   mlflow ui --backend-store-uri {tracking_uri(home)}
  Prefect UI  prefect server start   (then http://127.0.0.1:4200 — flow runs 'corpus')
  sample      {mirror.root}  (a dumps.wikimedia.org-style mirror: CirrusSearch, XML multistream, page_props, Wikidata)
"""
    return DemoReport(rows, text)
