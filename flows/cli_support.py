"""What every ``babelbench`` command shares: failing with a clear message, printing stage cells."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional, TypeVar

import typer

from tasks.errors import BabelbenchError
from tasks.settings import resolve_home

if TYPE_CHECKING:
    from tasks.warehouse.db import Warehouse

P = TypeVar("P")
T = TypeVar("T")
Force = Annotated[Optional[list[str]], typer.Option(help="Recompute STAGE and what depends on it (repeatable).")]


def fail(exc: BaseException) -> NoReturn:
    """Report a bad input or setup in one red line and exit 2; exit 1 is kept for "a stage cell failed"."""
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def run_cells(run: Callable[[], list[dict]]) -> None:
    """Run a flow that returns stage cells, print them, and exit 1 when any cell failed."""
    try:
        rows = run()
    except BabelbenchError as exc:
        fail(exc)
    print_table(rows)
    if any(r["status"] == "failed" for r in rows):
        raise typer.Exit(1)


def run_flow(flow: Callable[[P], list[dict]], build: Callable[[], P]) -> None:
    """Build a command's flow parameters (bad values: one clear error, exit 2), then run it as :func:`run_cells`."""
    try:
        params = build()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        fail(exc)
    run_cells(lambda: flow(params))


def with_warehouse(action: Callable[[Warehouse], T], *, read_only: bool = False) -> T:
    """Run ``action`` on the home's warehouse; a babelbench error becomes one clear line and exit 2."""
    from tasks.warehouse.db import Warehouse

    try:
        with Warehouse(resolve_home(), read_only=read_only) as wh:
            return action(wh)
    except BabelbenchError as exc:
        fail(exc)


def split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def print_table(rows: list[dict]) -> None:
    """Stage cells as aligned columns, for operators reading a terminal."""
    if not rows:
        return
    columns = ["stage", "cell", "status", "rows", "issues", "fingerprint", "message"]
    widths = {c: max(len(c), *(len(str(r.get(c) if r.get(c) is not None else "")) for r in rows)) for c in columns[:-1]}
    typer.echo("  ".join(c.ljust(widths.get(c, 0)) for c in columns))
    for r in rows:
        typer.echo("  ".join(str(r.get(c) if r.get(c) is not None else "").ljust(widths.get(c, 0)) for c in columns))
