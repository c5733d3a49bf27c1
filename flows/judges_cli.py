"""``babelbench judges``: how far a benchmark's judges (and the people whose verdicts were imported) agree."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from flows.cli_support import command_group, with_warehouse

judges_app = command_group("Compare the judges of a benchmark with each other and with people.")
COLUMNS = ("kind", "lang", "measure", "judges", "n", "missing", "agreement", "kappa", "95% interval", "note")


@judges_app.command("agreement")
def agreement(
    benchmark: Annotated[str, typer.Option(help="A benchmark with stored verdicts (`babelbench eval`).")],
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap intervals.")] = 0,
    resamples: Annotated[int, typer.Option(min=10, help="Bootstrap resamples of the instances per interval.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of rows (default: a table).")] = False,
) -> None:
    """Cohen's κ of every pair of judges on the responses both rated, Fleiss' κ of the panel (three judges or
    more) on those all rated, with raw agreement, n and 95% intervals; over all languages and per language.
    Missing verdicts (failed judge calls) are left out and counted; people's verdicts come from `import verdicts`."""
    from tasks.metrics import judge_agreement

    rows = with_warehouse(lambda wh: judge_agreement(wh, benchmark, seed=seed, resamples=resamples), read_only=True)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        typer.echo(f"no two judges rated the same response of {benchmark} (see `babelbench eval --judges`,"
                   " `babelbench import verdicts`)")
    else:
        _print(rows)


def _print(rows: list[dict]) -> None:
    def cells(row: dict) -> list[str]:
        interval = "n/a" if row["ci_low"] is None else f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        return [row["kind"], row["lang"], row["measure"], " ~ ".join(row["judges"]), str(row["n"]),
                str(row["missing"]), _number(row["agreement"]), _number(row["kappa"]), interval, row["note"] or ""]

    table = [list(COLUMNS), *map(cells, rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    for line in table:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
