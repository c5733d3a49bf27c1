"""``babelbench import``: published datasets as benchmarks, in the tables built benchmarks use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.cli_support import command_group, split_list, with_warehouse

import_app = command_group("Import a published dataset as a benchmark (whole or not at all).")


@import_app.command("mkqa")
def import_mkqa(
    source: Annotated[Path, typer.Option(help="MKQA annotations: mkqa.jsonl.gz (or .jsonl) as Apple publishes it.")],
    name: Annotated[str, typer.Option(help="Benchmark name.")] = "mkqa",
    langs: Annotated[Optional[str], typer.Option(help="Locales to keep, comma-separated (default: all the file has).")] = None,
    force: Annotated[bool, typer.Option(help="Import again even if this file was imported unchanged.")] = False,
) -> None:
    """One closed-book instance per example and locale, with gold answers (type, entity, aliases) for scoring."""
    from tasks.imports.mkqa import import_mkqa as run

    ref = with_warehouse(lambda wh: run(wh, source, name, split_list(langs) if langs else None, force=force))
    typer.echo(f"{name}: {ref.status} — {ref.message}")
