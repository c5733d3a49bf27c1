"""``babelbench qa``, ``translate``, ``instances`` and ``review``: the QA benchmark commands."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.cli_support import (
    MaxCalls,
    MaxTokens,
    MaxUsd,
    QaForce,
    budget_of,
    command_group,
    key_values,
    run_flow,
    split_list,
    with_warehouse,
)
from tasks.settings import HOME_ENV

qa_app = command_group("Generate QA items (ECLEKTIC, XRAG) with quality control.")
instances_app = command_group("Assemble benchmark instances per setting and export them.")
review_app = command_group("Human review of QA items: export a sheet, import the decisions.")


@qa_app.command("build")
def qa_build(
    recipe: Annotated[str, typer.Option(help="A recipe that builds: eclektic | xrag | an installed package's.")],
    langs: Annotated[str, typer.Option(help="Languages, comma-separated (XRAG: the pivot, en, first).")],
    generator: Annotated[str, typer.Option(help="Registry name of the generating model.")] = "local",
    judge: Annotated[Optional[str], typer.Option(help="Registry name of the QC pre-screen model (default: the generator).")] = None,
    benchmark: Annotated[Optional[str], typer.Option(help="Benchmark name (default: the recipe).")] = None,
    per_lang: Annotated[int, typer.Option(help="ECLEKTIC: articles sampled per language.")] = 100,
    max_pairs: Annotated[int, typer.Option(help="XRAG: related pairs kept per pair kind.")] = 50,
    qtypes: Annotated[str, typer.Option(help="XRAG: question types, comma-separated.")] = "aggregation,comparison,multihop,set",
    pair_model: Annotated[Optional[str], typer.Option(
        help="XRAG: sentence-transformers model that also pairs articles across languages by similarity.")] = None,
    setting: Annotated[Optional[list[str]], typer.Option(
        "--set", help="Any setting of the recipe's build, KEY=VALUE (a JSON value, or text); repeatable.")] = None,
    prescreen: Annotated[bool, typer.Option(help="Ask the judge model to pre-screen every item (the rule checks run either way).")] = True,
    window: Annotated[Optional[str], typer.Option(
        help="Live build: only articles that first appeared within SINCE[:UNTIL] (dates YYYY-MM-DD or dump dates "
             "YYYYMMDD, inclusive); XRAG distractors then come from articles older than SINCE. `latest`: the articles "
             "new in the latest ingested dump since the one before it, named <recipe>-live-YYYY-MM by the dump's month "
             "unless --benchmark names it.")] = None,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None, force: QaForce = None,
) -> None:
    """Generate QA items; every item is stored with its parse status and QC decisions.  The options marked ECLEKTIC
    or XRAG set the setting of that name of any recipe that has it; --set sets any other."""
    from flows.qa import QaBuildParams, qa_build_flow
    from tasks.qa import parse_window
    from tasks.recipe import recipe as recipe_of

    def params() -> QaBuildParams:
        latest = window == "latest"
        dated = parse_window(window) if window and not latest else None
        named = {"per_lang": per_lang, "max_pairs": max_pairs, "question_types": split_list(qtypes),
                 "dense_model": pair_model, "window": str(dated) if dated else None}
        model = recipe_of(recipe).build_config
        config = {key: value for key, value in named.items() if value is not None and model and key in model.model_fields}
        return QaBuildParams(
            recipe=recipe, benchmark=benchmark, langs=split_list(langs), generator=generator, judge=judge,
            prescreen=prescreen, live=latest, budget=budget_of(max_calls, max_tokens, max_usd),
            config=config | key_values(setting or [], "--set"), home=os.environ[HOME_ENV], force=force or [])

    run_flow(qa_build_flow, params)


def translate(
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    to: Annotated[str, typer.Option("--to", help="Target languages, comma-separated.")],
    translator: Annotated[str, typer.Option(help="Registry name of the translating model.")] = "local",
    min_chrf: Annotated[Optional[float], typer.Option(help="Round-trip chrF threshold of the gate (0-100).")] = None,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None, force: QaForce = None,
) -> None:
    """Translate the accepted items into each target language, through the quality gate."""
    from flows.qa import TranslateParams, translate_flow
    from tasks.translate import TranslateConfig

    run_flow(translate_flow, lambda: TranslateParams(
        benchmark=benchmark, to=split_list(to), translator=translator,
        config=TranslateConfig() if min_chrf is None else TranslateConfig(min_chrf=min_chrf),
        budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV], force=force or []))


@instances_app.command("build")
def instances_build(
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    qc_policy: Annotated[str, typer.Option(help="prescreen (machine flags and checks that could not run exclude) | human (only people exclude).")] = "prescreen",
    seed: Annotated[int, typer.Option(help="Seed of the document order.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Export directory (default: $HOME/exports).")] = None,
    dense_model: Annotated[Optional[str], typer.Option(help="XRAG distractors: sentence-transformers model for the dense half.")] = None,
    backend: Annotated[str, typer.Option(help="Index backend for BM25 distractor candidates.")] = "tantivy",
    answer_checker: Annotated[Optional[str], typer.Option(
        help="XRAG distractors: registry model asked whether a candidate answers the question.")] = None,
    use_unverified_distractors: Annotated[bool, typer.Option(
        help="Use candidates the answer check could not judge (off: the next candidate is tried instead).")] = False,
    max_calls: MaxCalls = None, max_tokens: MaxTokens = None, max_usd: MaxUsd = None, force: QaForce = None,
) -> None:
    """Select distractors (XRAG), assemble the instances of every setting and export them as JSON Lines."""
    from flows.qa import InstancesParams, instances_flow
    from tasks.distractors import DistractorConfig
    from tasks.instances import InstanceConfig

    run_flow(instances_flow, lambda: InstancesParams(
        benchmark=benchmark, instances=InstanceConfig(qc_policy=qc_policy, seed=seed),
        distractors=DistractorConfig(dense_model=dense_model, answer_checker=answer_checker,
                                     use_unverified_distractors=use_unverified_distractors), backend=backend,
        out=str(out) if out else None, budget=budget_of(max_calls, max_tokens, max_usd), home=os.environ[HOME_ENV],
        force=force or []))


@review_app.command("export")
def review_export(
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    out: Annotated[Path, typer.Option(help="Sheet to write: .csv or .jsonl.")],
    only_flagged: Annotated[bool, typer.Option(help="Only the items no machine vouches for: a check failed or could not run.")] = False,
) -> None:
    """Write a review sheet: each item, what the checks said, and columns for the decision."""
    from tasks.qa import export_sheet

    count = with_warehouse(lambda wh: export_sheet(wh, benchmark, out, only_flagged=only_flagged), read_only=True)
    typer.echo(f"wrote {count} items to {out}; fill `decision` (accept | reject), then `babelbench review import`")


@review_app.command("import")
def review_import(
    sheet: Annotated[Path, typer.Argument(help="The filled sheet (.csv or .jsonl).")],
    benchmark: Annotated[str, typer.Option(help="Benchmark name.")],
    reviewer: Annotated[Optional[str], typer.Option(help="Who decided, for rows without a reviewer.")] = None,
) -> None:
    """Store the sheet's decisions (all or nothing); they override the machine checks."""
    from tasks.qa import import_decisions

    count = with_warehouse(lambda wh: import_decisions(wh, benchmark, sheet, reviewer=reviewer))
    typer.echo(f"imported {count} decisions from {sheet}")
