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

import click
import typer
from typer.core import TyperGroup

os.environ.setdefault("DO_NOT_TRACK", "1")  # Prefect telemetry cannot reach its host offline
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from flows.cli_support import (  # noqa: E402
    ClirForce,
    CorpusForce,
    command_group,
    fail,
    prepare_flow_run,
    print_table,
    run_flow,
    set_verbose,
    split_list,
    with_warehouse,
)
from flows.eval_cli import arena, evaluate, features, leaderboard, report, rerun  # noqa: E402
from flows.import_cli import import_app  # noqa: E402
from flows.judges_cli import judges_app  # noqa: E402
from flows.models_cli import models_app  # noqa: E402
from flows.qa_cli import instances_app, qa_app, review_app, translate  # noqa: E402
from flows.score_cli import score_app  # noqa: E402
from flows.server_cli import server_app  # noqa: E402
from flows.warehouse_cli import warehouse_app  # noqa: E402
from tasks.errors import BabelbenchError  # noqa: E402
from tasks.settings import HOME_ENV, resolve_home  # noqa: E402
from tasks.warehouse import WAREHOUSE_ENV, parse_location  # noqa: E402
from tasks.text import OVERRIDES_ENV, reload_rules

#: The order a user runs the commands in; ``--help`` lists them so.
WORKFLOW = ("corpus", "clir", "qa", "translate", "instances", "review", "import", "models", "eval", "features", "arena", "leaderboard", "judges", "report", "publish", "rerun", "backfill", "score", "sql", "warehouse", "server", "demo")


class _WorkflowOrder(TyperGroup):
    """Lists commands in workflow order (Typer would put single commands before groups)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands, key=lambda name: WORKFLOW.index(name) if name in WORKFLOW else len(WORKFLOW))


app = command_group("Cross-lingual retrieval and RAG benchmarks from Wikipedia dumps.", cls=_WorkflowOrder)
corpus_app = command_group("Download and ingest Wikipedia dumps.")
app.add_typer(corpus_app, name="corpus")
clir_app = command_group("CLIRMatrix-style cross-lingual retrieval collections.")
app.add_typer(clir_app, name="clir")
app.add_typer(qa_app, name="qa")
app.add_typer(instances_app, name="instances")
app.add_typer(review_app, name="review")
app.command("translate")(translate)
app.command("eval")(evaluate)
app.command("features")(features)
app.command("arena")(arena)
app.command("report")(report)
app.command("rerun")(rerun)
app.command("leaderboard")(leaderboard)
app.add_typer(judges_app, name="judges")
app.add_typer(score_app, name="score")
app.add_typer(import_app, name="import")
app.add_typer(models_app, name="models")
app.add_typer(server_app, name="server")
app.add_typer(warehouse_app, name="warehouse")


@app.callback()
def main(
    home: Annotated[Optional[Path], typer.Option(help="babelbench home (warehouse, lake, MLflow store).", envvar=HOME_ENV)] = None,
    warehouse: Annotated[Optional[str], typer.Option(
        help="Where the warehouse is: empty for the home's DuckDB file, or 'ducklake:postgres:<libpq conninfo>' for a"
             " DuckLake that many workers write at once.", envvar=WAREHOUSE_ENV)] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print tracebacks of user errors (bad input, setup).")] = False,
    languages: Annotated[Optional[Path], typer.Option(
        help="CSV of language rules overriding or adding to the built-in table (default: languages.csv in the home).",
        envvar=OVERRIDES_ENV)] = None,
) -> None:
    """Select the home, the warehouse and the language-rule overrides for every command; ``--home`` wins over
    ``$BABELBENCH_HOME``, ``--warehouse`` over ``$BABELBENCH_WAREHOUSE``."""
    os.environ[HOME_ENV] = str(resolve_home(home))
    if warehouse is not None:
        try:
            parse_location(warehouse, Path(os.environ[HOME_ENV]))  # a bad URL is a user error before anything runs
        except BabelbenchError as exc:
            fail(exc)
        os.environ[WAREHOUSE_ENV] = warehouse
    if languages is not None:
        os.environ[OVERRIDES_ENV] = str(languages.expanduser().resolve())
    reload_rules()
    set_verbose(verbose)


@corpus_app.command("download")
def corpus_download(
    url: str,
    sha1: Annotated[Optional[str], typer.Option(help="Expected SHA-1 of the file.")] = None,
    md5: Annotated[Optional[str], typer.Option(help="Expected MD5 of the file.")] = None,
    dest: Annotated[Optional[Path], typer.Option(help="Directory to write to (default: $HOME/dumps/manual).")] = None,
) -> None:
    """Download one file (http(s), file:// or a path), resuming and verifying its checksum."""
    from tasks.dumps import download

    target = dest or resolve_home() / "dumps" / "manual"
    try:
        result = download(url, target, sha1=sha1, md5=md5, progress=sys.stderr.isatty())
    except BabelbenchError as exc:
        fail(exc)
    typer.echo(json.dumps({"path": str(result.path), "size": result.size, "sha1": result.sha1, "md5": result.md5,
                           "resumed": result.resumed, "attempts": result.attempts}))


@app.command("backfill")
def backfill(
    langs: Annotated[str, typer.Option(help="Languages to add everywhere, comma-separated.")],
) -> None:
    """Add languages to every corpus source, built collection, generated benchmark (as translation targets),
    evaluation, features run and arena; only missing cells compute, and what cannot gain a language is named."""
    from flows.backfill import BackfillParams, backfill_flow

    run_flow(backfill_flow, lambda: BackfillParams(langs=split_list(langs), home=os.environ[HOME_ENV]))


@corpus_app.command("ingest")
def corpus_ingest(
    lang: Annotated[str, typer.Option(help="Language code(s), comma-separated: en,ja,zh.")],
    source: Annotated[str, typer.Option(help="wikimedia | mirror URL | directory | file.")] = "wikimedia",
    date: Annotated[Optional[str], typer.Option(help="Dump date YYYYMMDD (default: latest complete).")] = None,
    kind: Annotated[Optional[str], typer.Option(help="cirrus | xml.")] = None,
    max_docs: Annotated[Optional[int], typer.Option(help="Keep the first N documents per language.")] = None,
    sitelinks: Annotated[str, typer.Option(help="auto | cirrus | page_props | wikidata | none.")] = "auto",
    force: CorpusForce = None,
) -> None:
    """Build documents and sitelinks for each language (cached per language cell)."""
    from flows.corpus import CorpusParams, corpus_flow

    run_flow(corpus_flow, lambda: CorpusParams(
        langs=split_list(lang), source=source, date=date, kind=kind, max_docs=max_docs, sitelinks=sitelinks,
        home=os.environ[HOME_ENV], force=force or [], progress=sys.stderr.isatty()))


@clir_app.command("build")
def clir_build(
    name: Annotated[str, typer.Option(help="Collection name.")],
    langs: Annotated[str, typer.Option(help="Languages, comma-separated (at least two).")],
    multi: Annotated[bool, typer.Option("--multi", help="Also build the MULTI collection.")] = False,
    multi_languages: Annotated[Optional[str], typer.Option(
        help="MULTI languages, comma-separated (default: the CLIRMatrix MULTI set).")] = None,
    top_k: Annotated[int, typer.Option(help="Hits per title query, and padding size.")] = 100,
    backend: Annotated[str, typer.Option(help="tantivy | elasticsearch.")] = "tantivy",
    min_documents: Annotated[int, typer.Option(help="Skip languages with fewer articles.")] = 10_000,
    force: ClirForce = None,
) -> None:
    """Index, mine and label title queries, project labels into BI (and MULTI) qrels."""
    from flows.clir import ClirBuildParams, clir_build_flow
    from tasks.pairing import ClirConfig

    run_flow(clir_build_flow, lambda: ClirBuildParams(
        name=name, langs=split_list(langs), multi=multi, backend=backend,
        clir=ClirConfig(top_k=top_k, min_documents=min_documents,
                        **({"multi_languages": tuple(split_list(multi_languages))} if multi_languages else {})),
        home=os.environ[HOME_ENV], force=force or []))


@clir_app.command("eval")
def clir_eval(
    name: Annotated[str, typer.Option(help="Collection name.")],
    ranker: Annotated[str, typer.Option(help="bm25 | dense | dense:MODEL | dense@INDEX:MODEL (flat, ivf, hnsw).")] = "bm25",
    rerank: Annotated[Optional[str], typer.Option(help="Cross-encoder model for re-scoring the top K.")] = None,
    split: Annotated[str, typer.Option(help="train | dev | test1 | test2 | full | all.")] = "test1",
    k: Annotated[int, typer.Option(help="Documents ranked per query.")] = 100,
    backend: Annotated[str, typer.Option(help="Index backend for bm25.")] = "tantivy",
    device: Annotated[Optional[str], typer.Option(
        help="Where models run: auto (CUDA when torch sees one) | cpu | cuda | cuda:N | mps. Default: $BABELBENCH_DEVICE or auto.")] = None,
    precision: Annotated[Optional[str], typer.Option(
        help="auto (fp16 on CUDA, fp32 elsewhere) | fp16 | fp32. Default: $BABELBENCH_PRECISION or auto.")] = None,
    batch_size: Annotated[Optional[int], typer.Option(
        help="Texts per model batch. Default: $BABELBENCH_BATCH_SIZE, else from the model and free memory.")] = None,
) -> None:
    """Rank, score (NDCG@1/5/10, NDCG@10 without the own article, MRR, recall) with bootstrap intervals.

    A dense ranker searches exactly; dense@flat:MODEL through a FAISS flat index (the same rankings),
    dense@ivf:MODEL or dense@hnsw:MODEL through an approximate one (its recall@100 is logged)."""
    from flows.clir import clir_eval_flow
    from tasks.placement import device_options
    from tasks.stages import ClirEvalParams

    try:
        placement = device_options(device, precision, batch_size)
        prepare_flow_run()
        metrics = clir_eval_flow(ClirEvalParams(name=name, ranker=ranker, rerank=rerank, split=split, k=k,
                                                backend=backend, device=placement, home=os.environ[HOME_ENV]))
    except (BabelbenchError, ValueError) as exc:
        fail(exc)
    for row in metrics:
        if row["metric"] == "ndcg@10":
            interval = "n/a" if row["ci_low"] is None else f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
            typer.echo(f"{row['src_lang']:>4} > {row['tgt_lang']:<4} ndcg@10 {row['value']:.4f}  {interval}"
                       f"  n={row['n_queries']}")


@clir_app.command("export")
def clir_export(
    name: Annotated[str, typer.Option(help="Collection name.")],
    out: Annotated[Path, typer.Option(help="Output directory.")],
) -> None:
    """Write the collection as CLIRMatrix JSON Lines (per direction and split) and doc TSVs."""
    from tasks.pairing import export_collection, validate_export

    written = with_warehouse(lambda wh: export_collection(wh, name, out), read_only=True)
    problems = validate_export(out / name)
    typer.echo(f"wrote {len(written)} files under {out / name}")
    if problems:
        fail(BabelbenchError("export does not validate: " + "; ".join(problems[:5])))


@app.command("publish")
def publish(
    benchmark: Annotated[str, typer.Argument(help="The benchmark or CLIR collection to publish (built or imported).")],
    out: Annotated[Path, typer.Option(help="Folder to write it under: <OUT>/<BENCHMARK>, replaced whole.")],
    push: Annotated[Optional[str], typer.Option(
        help="Also upload it to this Hugging Face dataset repository (owner/name); needs HF_TOKEN or `hf auth login`.")]
        = None,
) -> None:
    """A Hugging Face dataset folder: Parquet per configuration and split, a dataset card written from the warehouse
    (README.md) and Croissant metadata (croissant.json); each source article named for attribution. A CLIR
    collection: its documents and queries per language, its qrels per direction and split, the card with the label
    distribution and the Jenks breaks."""
    from flows.publish import PublishParams, publish_flow

    run_flow(publish_flow, lambda: PublishParams(benchmark=benchmark, out=str(out), repo=push,
                                                 home=os.environ[HOME_ENV]),
             results=lambda params: typer.echo(f"published: {out.expanduser().resolve() / benchmark}"))


@app.command("sql")
def sql(query: str, as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of objects.")] = False) -> None:
    """Run a query against the warehouse and print the rows (CSV with a header by default)."""
    import duckdb

    from tasks.warehouse import Warehouse

    try:
        with Warehouse(resolve_home(), read_only=True) as wh:
            columns, rows = wh.query_with_columns(query)
    except (BabelbenchError, duckdb.Error) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps([dict(zip(columns, row)) for row in rows], ensure_ascii=False, default=str))
        return
    writer = csv.writer(sys.stdout)
    writer.writerow(columns)
    writer.writerows(rows)


@app.command("demo")
def demo() -> None:
    """Build the bundled sample and run the pipeline on it, offline; then say where to look."""
    from flows.demo import run_demo

    try:
        prepare_flow_run()
        report = run_demo(resolve_home())
    except BabelbenchError as exc:
        fail(exc)
    print_table(report.rows)
    typer.echo(report.text)


if __name__ == "__main__":
    app()
