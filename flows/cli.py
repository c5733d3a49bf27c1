"""The ``babelbench`` command line: corpus download/ingest, SQL against the warehouse, the demo.

Heavy modules (Prefect, MLflow, Dask) are imported inside the commands that
need them, so ``babelbench sql`` answers quickly.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

os.environ.setdefault("DO_NOT_TRACK", "1")  # Prefect telemetry cannot reach its host offline
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from tasks.errors import BabelbenchError  # noqa: E402
from tasks.settings import HOME_ENV, resolve_home  # noqa: E402

app = typer.Typer(help="Cross-lingual retrieval and RAG benchmarks from Wikipedia dumps.", no_args_is_help=True)
corpus_app = typer.Typer(help="Download and ingest Wikipedia dumps.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")


@app.callback()
def main(home: Annotated[Optional[Path], typer.Option(help="babelbench home (warehouse, lake, MLflow store).", envvar=HOME_ENV)] = None) -> None:
    """Select the home for every command; ``--home`` wins over ``$BABELBENCH_HOME``."""
    os.environ[HOME_ENV] = str(resolve_home(home))


def _fail(exc: BaseException) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@corpus_app.command("download")
def corpus_download(
    url: str,
    sha1: Annotated[Optional[str], typer.Option(help="Expected SHA-1 of the file.")] = None,
    md5: Annotated[Optional[str], typer.Option(help="Expected MD5 of the file.")] = None,
    dest: Annotated[Optional[Path], typer.Option(help="Directory to write to (default: $HOME/dumps/manual).")] = None,
) -> None:
    """Download one file (http(s), file:// or a path), resuming and verifying its checksum."""
    from tasks.dumps.download import download

    target = dest or resolve_home() / "dumps" / "manual"
    try:
        result = download(url, target, sha1=sha1, md5=md5, progress=sys.stderr.isatty())
    except BabelbenchError as exc:
        _fail(exc)
    typer.echo(json.dumps({"path": str(result.path), "size": result.size, "sha1": result.sha1, "md5": result.md5,
                           "resumed": result.resumed, "attempts": result.attempts}))


@corpus_app.command("ingest")
def corpus_ingest(
    lang: Annotated[str, typer.Option(help="Language code(s), comma-separated: en,ja,zh.")],
    source: Annotated[str, typer.Option(help="wikimedia | mirror URL | directory | file.")] = "wikimedia",
    date: Annotated[Optional[str], typer.Option(help="Dump date YYYYMMDD (default: latest complete).")] = None,
    kind: Annotated[Optional[str], typer.Option(help="cirrus | xml.")] = None,
    max_docs: Annotated[Optional[int], typer.Option(help="Keep the first N documents per language.")] = None,
    sitelinks: Annotated[str, typer.Option(help="auto | cirrus | page_props | wikidata | none.")] = "auto",
    force: Annotated[Optional[list[str]], typer.Option(help="Recompute STAGE and what depends on it (repeatable).")] = None,
) -> None:
    """Build documents and sitelinks for each language (cached per language cell)."""
    from pydantic import ValidationError

    from flows.corpus import CorpusParams, corpus_flow

    try:
        params = CorpusParams(langs=_split(lang), source=source, date=date, kind=kind, max_docs=max_docs,
                              sitelinks=sitelinks, home=os.environ[HOME_ENV], force=force or [],
                              progress=sys.stderr.isatty())
    except ValidationError as exc:
        _fail(exc)
    try:
        rows = corpus_flow(params)
    except BabelbenchError as exc:
        _fail(exc)
    _print_table(rows)
    if any(r["status"] == "failed" for r in rows):
        raise typer.Exit(1)


@app.command("sql")
def sql(query: str, as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of objects.")] = False) -> None:
    """Run a query against the warehouse and print the rows (CSV with a header by default)."""
    import duckdb

    from tasks.warehouse.db import Warehouse

    try:
        with Warehouse(resolve_home(), read_only=True) as wh:
            columns, rows = wh.query_with_columns(query)
    except (BabelbenchError, duckdb.Error) as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps([dict(zip(columns, row)) for row in rows], ensure_ascii=False, default=str))
        return
    writer = csv.writer(sys.stdout)
    writer.writerow(columns)
    writer.writerows(rows)


def _print_table(rows: list[dict]) -> None:
    """Stage cells as aligned columns, for operators reading a terminal."""
    if not rows:
        return
    columns = ["stage", "cell", "status", "rows", "issues", "fingerprint", "message"]
    widths = {c: max(len(c), *(len(str(r.get(c) if r.get(c) is not None else "")) for r in rows)) for c in columns[:-1]}
    typer.echo("  ".join(c.ljust(widths.get(c, 0)) for c in columns))
    for r in rows:
        typer.echo("  ".join(str(r.get(c) if r.get(c) is not None else "").ljust(widths.get(c, 0)) for c in columns))


@app.command("demo")
def demo() -> None:
    """Build the bundled sample and run the pipeline on it, offline; then say where to look."""
    from flows.demo import run_demo

    try:
        report = run_demo(resolve_home())
    except BabelbenchError as exc:
        _fail(exc)
    _print_table(report.rows)
    typer.echo(report.text)


if __name__ == "__main__":
    app()
