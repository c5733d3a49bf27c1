"""``babelbench eval`` and ``leaderboard``: evaluate models on a benchmark, read the results."""

from __future__ import annotations

import csv
import json
import os
import sys
from typing import Annotated, Optional

import typer

from flows.cli_support import (
    MaxCalls, MaxTokens, MaxUsd, budget_of, fail, force_option, run_flow, split_list, with_warehouse,
)
from tasks.errors import ConfigError
from tasks.settings import HOME_ENV

EvalForce = Annotated[Optional[list[str]], force_option("inference, judging, scoring")]
LEADERBOARD_COLUMNS = ("setting", "lang", "subset", "model", "metric", "value", "ci_low", "ci_high", "n", "mode")


def evaluate(
    benchmark: Annotated[str, typer.Option(help="A built or imported benchmark.")],
    models: Annotated[str, typer.Option(help="Registry names of the models to evaluate, comma-separated.")],
    langs: Annotated[Optional[str], typer.Option(help="Question languages (default: all of the benchmark's).")] = None,
    settings: Annotated[Optional[str], typer.Option(help="Settings (default: all of the benchmark's).")] = None,
    judges: Annotated[str, typer.Option(help="Judges, comma-separated (ECLEKTIC: support judge; XRAG: a panel, "
                                              "majority vote; MKQA: none).")] = "local",
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None, force: EvalForce = None,
) -> None:
    """Ask every model each instance, judge the answers, and score them into the leaderboard."""
    from flows.evaluate import EvaluateParams, evaluate_flow

    run_flow(evaluate_flow, lambda: EvaluateParams(
        benchmark=benchmark, models=split_list(models), langs=split_list(langs) if langs else None,
        settings=split_list(settings) if settings else None, judges=split_list(judges),
        budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV], force=force or []))


def leaderboard(
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    output: Annotated[str, typer.Option("--format", help="table | json | csv.")] = "table",
    models: Annotated[Optional[str], typer.Option(help="Only these models, comma-separated.")] = None,
) -> None:
    """Print a benchmark's leaderboard: every metric per setting, language and model, with its 95% interval."""
    from tasks.metrics.leaderboard_stage import leaderboard_rows

    if output not in ("table", "json", "csv"):
        fail(ConfigError(f"--format {output!r}: choose table, json or csv"))
    rows = with_warehouse(lambda wh: leaderboard_rows(wh, benchmark, split_list(models) if models else None),
                          read_only=True)
    if not rows:
        fail(ConfigError(f"no leaderboard for benchmark {benchmark!r}; run `babelbench eval --benchmark {benchmark}"
                         " --models …` first"))
    if output == "json":
        typer.echo(json.dumps(rows, ensure_ascii=False, default=str))
    elif output == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=LEADERBOARD_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    def cell(row: dict, column: str) -> str:
        value = row[column]
        return f"{value:.3f}" if isinstance(value, float) else ("-" if value is None else str(value))

    widths = {c: max(len(c), *(len(cell(r, c)) for r in rows)) for c in LEADERBOARD_COLUMNS}
    typer.echo("  ".join(c.ljust(widths[c]) for c in LEADERBOARD_COLUMNS))
    for row in rows:
        typer.echo("  ".join(cell(row, c).ljust(widths[c]) for c in LEADERBOARD_COLUMNS))
