"""``babelbench eval``, ``features``, ``arena``, ``report`` and ``leaderboard``: evaluate models, read the results."""

from __future__ import annotations

import csv
import json
import os
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from flows.cli_support import (
    MaxCalls,
    MaxTokens,
    MaxUsd,
    budget_of,
    fail,
    force_option,
    run_flow,
    split_list,
    with_warehouse,
)
from tasks.errors import ConfigError
from tasks.mlflow_genai import DEFAULT_PER_LANGUAGE
from tasks.settings import HOME_ENV

if TYPE_CHECKING:
    from flows.evaluate import EvaluateParams
    from tasks.warehouse import Warehouse

EvalForce = Annotated[Optional[list[str]], force_option("evaluate")]
Traces = Annotated[str, typer.Option(help="Responses MLflow shows as traces: all, none, or N per model and language"
                                          " (a seeded sample; the arena: N battles per language).")]
TraceSeed = Annotated[int, typer.Option(help="Seed of the traces' sample.")]
LEADERBOARD_COLUMNS = ("benchmark", "setting", "lang", "subset", "model", "metric", "value", "ci_low", "ci_high", "n",
                       "answered", "failed", "judge_failed", "mode", "judges")


def evaluate(
    benchmark: Annotated[str, typer.Option(help="A built or imported benchmark.")],
    models: Annotated[str, typer.Option(help="Registry names of the models to evaluate, comma-separated.")],
    langs: Annotated[Optional[str], typer.Option(help="Question languages (default: all of the benchmark's).")] = None,
    settings: Annotated[Optional[str], typer.Option(help="Settings (default: all of the benchmark's).")] = None,
    judges: Annotated[str, typer.Option(help="Judges, comma-separated (ECLEKTIC: support judge; XRAG: a panel, "
                                              "majority vote; MKQA: none).")] = "local",
    mkqa_mode: Annotated[str, typer.Option(help="MKQA scoring: improved (generative models) or official (the"
                                                " published scorer's numbers, quirks included).")] = "improved",
    judge_failures: Annotated[str, typer.Option(help="An answer a missing judge verdict would decide: incorrect, or"
                                                     " exclude (left out of the metric's denominator); counted as"
                                                     " judge_failed either way.")] = "incorrect",
    judge_own_system: Annotated[bool, typer.Option(help="Let a judge that is also one of --models judge answers"
                                                        " (its own among them).")] = False,
    traces: Traces = str(DEFAULT_PER_LANGUAGE), trace_seed: TraceSeed = 0,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None, force: EvalForce = None,
) -> None:
    """Ask every model each instance, judge the answers, and score them into the leaderboard; exit 1 when a
    model's response failed (it counts as incorrect), naming the model."""
    from flows.evaluate import EvaluateParams, evaluate_flow
    from tasks.metrics import ScoringConfig
    from tasks.mlflow_genai import TraceSample

    run_flow(evaluate_flow, lambda: EvaluateParams(
        benchmark=benchmark, models=split_list(models), langs=split_list(langs) if langs else None,
        settings=split_list(settings) if settings else None, judges=split_list(judges),
        judge_own_system=judge_own_system, traces=TraceSample(traces=traces, seed=trace_seed),
        scoring=ScoringConfig(mkqa_mode=mkqa_mode, judge_failures=judge_failures),  # type: ignore[arg-type]
        budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV], force=force or []),
        problems=_failed_models)


def _failed_models(params: EvaluateParams) -> list[str]:
    """"model X: 12 of 40 responses failed (call_failed: …)" for each evaluated model with a failed response in
    the evaluated cells."""
    from flows.evaluate import evaluation_cells
    from tasks.metrics import failed_responses

    def failures(wh: Warehouse) -> list[str]:
        cells = evaluation_cells(wh, params)
        return [f"model {model}: {failed}" for model in params.models
                if (failed := failed_responses(wh, params.benchmark, model, cells))]

    return with_warehouse(failures, read_only=True)


def features(
    benchmark: Annotated[str, typer.Option(help="A benchmark with stored responses (`babelbench eval`).")],
    only: Annotated[Optional[str], typer.Option(help="Features to compute, comma-separated (default: all).")] = None,
    reference_model: Annotated[Optional[str], typer.Option(help="Reference system for overlap features when the"
                                                                 " benchmark has no gold answers.")] = None,
    nli_model: Annotated[Optional[str], typer.Option(help="NLI cross-encoder for support_entailment/neutral.")] = None,
    reranker_model: Annotated[Optional[str], typer.Option(help="Cross-encoder for reranker_score.")] = None,
    grader: Annotated[Optional[str], typer.Option(help="LLM (registry name) for answer_overlap_score and"
                                                       " fluency_score.")] = None,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None,
    force: Annotated[Optional[list[str]], force_option("features")] = None,
) -> None:
    """Heuristic features of every response (MIRAGE-BENCH): language, citations, overlap, labelled extras, and
    (named with --only) the model-based support and reranker features and the LLM-graded ones."""
    from flows.features import FeaturesParams, features_flow
    from tasks.features import FeatureModels

    chosen = {"nli": nli_model, "reranker": reranker_model}
    run_flow(features_flow, lambda: FeaturesParams(
        benchmark=benchmark, features=split_list(only) if only else None, reference_model=reference_model,
        models=FeatureModels(**{k: v for k, v in chosen.items() if v}), grader=grader,
        budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV], force=force or []))


def arena(
    benchmark: Annotated[str, typer.Option(help="A benchmark with stored responses of every system.")],
    models: Annotated[str, typer.Option(help="The systems to compare, comma-separated (at least two).")],
    judge: Annotated[str, typer.Option(help="Registry name of the pairwise judge.")],
    queries_per_lang: Annotated[int, typer.Option(help="Queries sampled per language.")] = 100,
    langs: Annotated[Optional[str], typer.Option(help="Languages (default: all with responses).")] = None,
    ties: Annotated[str, typer.Option(help="drop | half: what a tie is worth — a verdict of a tie, a pair whose two"
                                           " orders picked opposite winners, two systems without an answer.")]
    = "drop",
    judge_own_system: Annotated[bool, typer.Option(help="Let the judge rate pairs that include its own answers"
                                                        " (when it is also one of --models).")] = False,
    traces: Traces = str(DEFAULT_PER_LANGUAGE), trace_seed: TraceSeed = 0,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None,
    force: Annotated[Optional[list[str]], force_option("arena")]
    = None,
) -> None:
    """Judge every pair of systems on sampled queries in both orders, then rate them (Bradley–Terry): a system
    without an answer on a sampled query loses to each system that answered; a system that never lost (or never
    won) is shown as unbounded, not given a number. On a benchmark built from dated articles, also rate them per
    knowledge-cutoff window, on the battles whose question is in that window for both systems."""
    from flows.arena import ArenaParams, arena_flow
    from tasks.arena import ArenaConfig
    from tasks.mlflow_genai import TraceSample

    run_flow(arena_flow, lambda: ArenaParams(
        benchmark=benchmark, models=split_list(models), judge=judge, langs=split_list(langs) if langs else None,
        arena=ArenaConfig(queries_per_lang=queries_per_lang, judge_own_system=judge_own_system), ties=ties,
        traces=TraceSample(traces=traces, seed=trace_seed),
        budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV], force=force or []),
        results=lambda params: _print_ratings(params.benchmark, params.judge))


def _print_ratings(benchmark: str, judge: str) -> None:
    for line in _ratings_lines(benchmark, judge):
        typer.echo(line)


def _ratings_lines(benchmark: str, judge: str | None = None, models: list[str] | None = None,
                   as_of: int | None = None) -> list[str]:
    """The benchmark's arena ratings over all languages (``judge``'s, or each judge's) as one table per judge, each
    followed by its ratings per knowledge-cutoff window where the benchmark has them (at snapshot ``as_of``)."""
    from tasks.arena import ratings_table, window_tables
    from tasks.llm import load_registry
    from tasks.stages import overall_ratings

    rows, cutoffs = with_warehouse(lambda wh: (overall_ratings(wh, benchmark, judge, models, windows=True),
                                               load_registry(home=wh.home).cutoffs), read_only=True, as_of=as_of)
    lines: list[str] = []
    for name in sorted({row["judge"] for row in rows}):
        mine = [row for row in rows if row["judge"] == name and row["subset"] == "all"]
        lines += ([""] if lines else []) + [f"arena ratings of {benchmark}, judge {name}: Bradley–Terry logits"
                                            f" (mean zero) with 95% intervals, ties {mine[0]['ties']}"]
        lines += ratings_table(mine)
        lines += window_tables([row for row in rows if row["judge"] == name and row["subset"] != "all"], mine,
                               cutoffs)
    return lines


def report(
    benchmark: Annotated[str, typer.Option(help="The benchmark to report on.")],
    out: Annotated[str, typer.Option(help="The HTML file to write (self-contained: opens offline).")] = "report.html",
    as_of: Annotated[Optional[int], typer.Option(
        "--as-of", metavar="SNAPSHOT", help="Read the warehouse as it was at this snapshot (a DuckLake's: every report"
                                            " names the one it read).")] = None,
) -> None:
    """One HTML file with the arena's ratings, intervals, heatmap and judge consistency, and the metrics, read at
    one warehouse snapshot, which it names."""
    from flows.report import ReportParams, report_flow

    run_flow(report_flow, lambda: ReportParams(benchmark=benchmark, out=out, as_of=as_of, home=os.environ[HOME_ENV]))


def rerun(
    stage: Annotated[str, typer.Option(help="The stage to recompute (its descendants follow).")],
    scope: Annotated[str, typer.Option(help="The benchmark, or the collection for index/retrieval/qrels.")] = "corpus",
    langs: Annotated[Optional[str], typer.Option(help="Only these languages' cells (default: every language of the"
                                                       " scope); refused where one cell covers every language.")] = None,
    models: Annotated[Optional[str], typer.Option(help="Only these models' cells (default: every model of the"
                                                        " scope).")] = None,
) -> None:
    """Recompute one stage on one scope with its last run's parameters; everything else is a cache hit."""
    from flows.rerun import RerunParams, rerun_stage

    run_flow(rerun_stage, lambda: RerunParams(
        stage=stage, scope=scope, langs=split_list(langs) if langs else None,  # type: ignore[arg-type]
        models=split_list(models) if models else None, home=os.environ[HOME_ENV]))


def leaderboard(
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    output: Annotated[str, typer.Option("--format", help="table | json | csv (json and csv: the evaluation's rows,"
                                                         " or the arena's ratings where there is no evaluation).")]
    = "table",
    models: Annotated[Optional[str], typer.Option(help="Only these models, comma-separated.")] = None,
    months: Annotated[Optional[str], typer.Option(
        help="A live family (benchmarks named NAME-YYYY-MM): the months to pool, comma-separated (default: all).")] = None,
    as_of: Annotated[Optional[int], typer.Option(
        "--as-of", metavar="SNAPSHOT", help="Read the warehouse as it was at this snapshot (a DuckLake's: every"
                                            " leaderboard names the one it read), to show a past table again.")] = None,
) -> None:
    """Print a benchmark's leaderboard: every metric per setting, language and model, with its 95% interval, then
    the arena's ratings over all languages (one table per judge, then one per knowledge-cutoff window where the
    benchmark has them); for a live family (--benchmark xrag-live over
    xrag-live-YYYY-MM), the window split pooled over the chosen months. Everything is read at one warehouse
    snapshot, which the table names last (json and csv: a warehouse_snapshot field in every row)."""
    from tasks.qa import live_months
    from tasks.stages import leaderboard_rows, overall_ratings
    from tasks.warehouse import snapshot_label

    if output not in ("table", "json", "csv"):
        fail(ConfigError(f"--format {output!r}: choose table, json or csv"))
    chosen = split_list(models) if models else None
    # every read below at one snapshot: the latest now, unless asked for a past one (refused by an embedded warehouse)
    snapshot = with_warehouse(lambda wh: wh.snapshot(), read_only=True, as_of=as_of)

    def read(wh: Warehouse) -> list[dict]:
        if months or (not leaderboard_rows(wh, benchmark, chosen) and live_months(wh, benchmark)):
            from tasks.metrics import pooled_window_rows  # scoring's imports (SciPy) only for a live family

            return pooled_window_rows(wh, benchmark, split_list(months) if months else None, chosen)
        return leaderboard_rows(wh, benchmark, chosen)

    rows = with_warehouse(read, read_only=True, as_of=snapshot)
    if output == "table":
        ratings = _ratings_lines(benchmark, models=chosen, as_of=snapshot)
        if not rows and not ratings:
            _nothing_to_show(benchmark)
        if rows:
            _print_table(rows)
        for line in ([""] if rows and ratings else []) + ratings:
            typer.echo(line)
        typer.echo(f"\nwarehouse snapshot {snapshot_label(snapshot)}")
        return
    columns: tuple[str, ...] = LEADERBOARD_COLUMNS
    if not rows:
        rows = with_warehouse(lambda wh: overall_ratings(wh, benchmark, models=chosen, windows=True), read_only=True,
                              as_of=snapshot)
        columns = tuple(rows[0]) if rows else columns
    if not rows:
        _nothing_to_show(benchmark)
    rows = [row | {"warehouse_snapshot": snapshot} for row in rows]
    columns += ("warehouse_snapshot",)
    if output == "json":
        typer.echo(json.dumps(rows, ensure_ascii=False, default=str))
    else:
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _nothing_to_show(benchmark: str) -> NoReturn:
    fail(ConfigError(f"no leaderboard for benchmark {benchmark!r}: no evaluation and no arena ratings; run"
                     f" `babelbench eval --benchmark {benchmark} --models …` or `babelbench arena --benchmark"
                     f" {benchmark} …` first"))


def _print_table(rows: list[dict]) -> None:
    def cell(row: dict, column: str) -> str:
        value = row[column]
        if value is None and column in ("ci_low", "ci_high") and row["value"] is not None:
            return "n/a"  # a value without an interval: one cluster (question) to resample, or none computed
        return f"{value:.3f}" if isinstance(value, float) else ("-" if value is None else str(value))

    widths = {c: max(len(c), *(len(cell(r, c)) for r in rows)) for c in LEADERBOARD_COLUMNS}
    typer.echo("  ".join(c.ljust(widths[c]) for c in LEADERBOARD_COLUMNS))
    for row in rows:
        typer.echo("  ".join(cell(row, c).ljust(widths[c]) for c in LEADERBOARD_COLUMNS))
