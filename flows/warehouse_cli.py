"""``babelbench warehouse``: the warehouse itself — moving a home's warehouse to a DuckLake and back."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.cli_support import command_group, fail
from tasks.errors import BabelbenchError
from tasks.settings import resolve_home

warehouse_app = command_group("The warehouse itself: copy it to a DuckLake, or back into a home.")


@warehouse_app.command("copy")
def copy(
    to: Annotated[str, typer.Option("--to", help="The target: 'ducklake:postgres:<libpq conninfo>', or the folder of a"
                                                 " home (its embedded warehouse.duckdb).")],
    lake: Annotated[Optional[str], typer.Option(help="Where the target's data files go (a path or object-store URL;"
                                                     " default: the target home's lake/).")] = None,
) -> None:
    """Copy this home's warehouse (--warehouse / BABELBENCH_WAREHOUSE) into an empty one, in one transaction, then
    compare every table's row count and content digest on both sides; exit 1 when one differs."""
    from tasks.home import open_warehouse
    from tasks.warehouse import Warehouse, copy_target, copy_warehouse, snapshot_label

    home = resolve_home()
    try:
        target_home, location = copy_target(to, home, lake)
        source = open_warehouse(home)
        if location.url == source.location.url:
            raise BabelbenchError(f"--to {to} is the warehouse being copied")
        target = Warehouse(target_home, location=location)
        with tempfile.TemporaryDirectory(prefix=".copy-", dir=home) as staging:
            snapshot, tables = copy_warehouse(source, target, Path(staging))
    except BabelbenchError as exc:
        fail(exc)
    width = max(len(t.table) for t in tables)
    typer.echo(f"{'table'.ljust(width)}  {'rows':>9}  digest        check")
    for t in tables:
        typer.echo(f"{t.table.ljust(width)}  {t.target[0]:>9}  {t.target[1][:12]}  "
                   + ("equal" if t.equal else f"DIFFERS (source: {t.source[0]} rows, {t.source[1][:12]})"))
    differ = [t.table for t in tables if not t.equal]
    typer.echo(f"\ncopied {len(tables)} tables, {sum(t.source[0] for t in tables)} rows, from {source.path} (snapshot"
               f" {snapshot_label(snapshot)}) into {target.path}")
    if differ:
        typer.secho(f"error: the copy differs from the source in {', '.join(differ)}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo("every table has the same row count and content digest in both")
