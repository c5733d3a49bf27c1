"""``babelbench import``: published datasets as benchmarks, in the tables built benchmarks use.

Each command runs the ``import`` flow (flows/imports.py), the one the ``import`` deployment runs.

Every dataset command takes ``--source``, ``--name``, ``--langs`` and ``--force``;
the layout each reads is described in its ``--source`` help and in its module of
``tasks/imports/``.  ``import responses`` stores a model's answers made elsewhere
(tasks/imports/responses.py) and ``import verdicts`` a person's verdicts on them
(tasks/imports/verdicts.py), each in one import stage cell, without a flow of its own.
"""

# no `from __future__ import annotations`: typer reads the options of the commands _file_command makes from
# their annotations, which must be evaluated where the closure's values are
import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from flows.cli_support import command_group, key_values, run_flow, split_list, with_warehouse
from tasks.settings import HOME_ENV

import_app = command_group("Import a published dataset as a benchmark (whole or not at all).")

Langs = Annotated[Optional[str], typer.Option(help="Languages to keep, comma-separated (default: all it has).")]
Name = Annotated[str, typer.Option(help="Benchmark name.")]
Force = Annotated[bool, typer.Option(help="Import again even if these files were imported unchanged.")]


def _run(dataset: str, source: Path, name: str | None, langs: str | None, force: bool, **options: Any) -> None:
    """Run the import flow (as a deployment run would) and print its stage cell."""
    from flows.imports import ImportParams, import_flow

    run_flow(import_flow, lambda: ImportParams(dataset=dataset, source=str(source), name=name,
                                               langs=split_list(langs) if langs else None, force=force,
                                               home=os.environ[HOME_ENV], **options))


def _file_command(dataset: str, default_name: str, source_help: str, doc: str) -> None:
    """Register ``import <dataset>``: one published file in, one benchmark out."""

    def command(source: Annotated[Path, typer.Option(help=source_help)], name: Name = default_name,
                langs: Langs = None, force: Force = False) -> None:
        _run(dataset, source, name, langs, force)

    command.__doc__ = doc
    import_app.command(dataset)(command)


_file_command("mkqa", "mkqa", "MKQA annotations: mkqa.jsonl.gz (or .jsonl) as Apple publishes it.",
              "One closed-book instance per example and locale, with gold answers (type, entity, aliases) for scoring.")
_file_command("eclektic", "eclektic", "The released eclektic_main.jsonl: q_id, original_lang, title, content, question,"
              " answer and <lang>_q/_a/_c translations per line.",
              "Closed book in each question's source language and every target, with the hint ablations and open book.")
_file_command("xrag", "xrag", "A released XRAG file (xrag.dev.jsonl or xrag.test.jsonl).",
              "Each question with its supporting and distracting articles, in its setting (mono- or multilingual"
              " retrieval).")


@import_app.command("miracl")
def import_miracl(
    source: Annotated[Path, typer.Option(help="A directory with MIRACL's topics.*-<lang>-<split>.tsv,"
                                              " qrels.*-<lang>-<split>.tsv and '…corpus…-<lang>/' .jsonl(.gz) files.")],
    name: Name = "mirage", langs: Langs = None, force: Force = False,
    split: Annotated[str, typer.Option(help="Which topics/qrels split to read (MIRAGE uses dev).")] = "dev",
) -> None:
    """A MIRAGE benchmark: each judged query with its judged passages (relevant and not), shuffled."""
    _run("miracl", source, name, langs, force, split=split)


def _folder_command(dataset: str, source_help: str, name_help: str, doc: str) -> None:
    """Register ``import <dataset>``: one published folder in, named after the folder unless a name is given."""

    def command(source: Annotated[Path, typer.Option(help=source_help)],
                name: Annotated[Optional[str], typer.Option(help=name_help)] = None,
                langs: Langs = None, force: Force = False) -> None:
        _run(dataset, source, name, langs, force)

    command.__doc__ = doc
    import_app.command(dataset)(command)


_folder_command("clirmatrix", "A collection directory in CLIRMatrix's layout, as `clir export` writes it:"
                " <q>.<d>.<split>.jsonl files and docs/<lang>.tsv.", "Collection name (default: the directory's).",
                "A CLIR collection (documents, index, qrels) that `clir eval` evaluates like a built one.")
_folder_command("hf", "A folder `babelbench publish` wrote (or downloaded from the hub): README.md with its configs,"
                " and their Parquet files.", "Benchmark or collection name (default: the folder's).",
                "A published benchmark folder, each instance checked against its content hash, with its sources,"
                " licence and citation: evaluate it like a built one. A published CLIR collection, each file checked"
                " against its sha256 in croissant.json: `clir eval` evaluates it like a built one.")


@import_app.command("responses")
def import_responses(
    benchmark: Annotated[str, typer.Option(help="The benchmark the responses answer (built or imported).")],
    model: Annotated[str, typer.Option(help="The name the responses are stored under: not a registry model's.")],
    file: Annotated[Path, typer.Option(help='JSON lines {"instance_id", "text"}, optionally "answer" and "citations"'
                                            " (the cited document ids).")],
    force: Force = False,
) -> None:
    """A model's responses made elsewhere, stored as its responses: `eval`, `features`, `arena` and `leaderboard`
    use them without calling it."""
    from tasks.imports import import_responses as store
    from tasks.llm import load_registry
    from tasks.warehouse import Warehouse

    def run(wh: Warehouse) -> None:
        ref = store(wh, benchmark, model, file, load_registry(home=wh.home).names, force=force)
        typer.echo(f"{ref.stage}[{ref.cell}]: {ref.status}, {ref.message}")

    with_warehouse(run)


@import_app.command("verdicts")
def import_verdicts(
    benchmark: Annotated[str, typer.Option(help="The benchmark whose stored responses the verdicts are on.")],
    judge: Annotated[str, typer.Option(help="Who gave them: stored as judge human:<JUDGE>, never in a model panel.")],
    file: Annotated[Path, typer.Option(help='JSON lines {"instance_id", "model", "verdict": "yes"|"no"} (true and'
                                            " false are read as yes and no).")],
    force: Force = False,
) -> None:
    """A person's verdicts on stored responses, kept beside the judges' for `judges agreement`; importing the same
    name again replaces its verdicts."""
    from tasks.imports import import_verdicts as store
    from tasks.warehouse import Warehouse

    def run(wh: Warehouse) -> None:
        ref = store(wh, benchmark, judge, file, force=force)
        typer.echo(f"{ref.stage}[{ref.cell}]: {ref.status}, {ref.message}")

    with_warehouse(run)


def _installed_command(dataset: str) -> None:
    """Register ``import <dataset>`` for an importer an installed package declares (entry point group
    ``babelbench.importer``): the common options, and the layout's own as ``--option KEY=VALUE``."""

    def command(source: Annotated[Path, typer.Option(help="The published file or directory.")],
                name: Annotated[Optional[str], typer.Option(help="Benchmark name (default: the layout's).")] = None,
                langs: Langs = None, force: Force = False,
                option: Annotated[Optional[list[str]], typer.Option(
                    help="An option of the layout, KEY=VALUE (a JSON value, or text); repeatable.")] = None) -> None:
        _run(dataset, source, name, langs, force, options=key_values(option or [], "--option"))

    command.__doc__ = f"A {dataset} dataset, by the importer an installed package registers."
    import_app.command(dataset)(command)


# entry points are read without importing anything: a command line that never imports pays for nothing
for _entry in entry_points(group="babelbench.importer"):
    if _entry.name not in {info.name for info in import_app.registered_commands}:
        _installed_command(_entry.name)
