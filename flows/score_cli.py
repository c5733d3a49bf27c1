"""``babelbench score``: score predictions made elsewhere, file in, one JSON object out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli_support import command_group, fail, split_list
from tasks.errors import BabelbenchError

score_app = command_group("Score predictions or judgements made elsewhere, by each protocol's rules.")
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object (default: a readable summary).")]


def _show(result: dict, as_json: bool, lines: list[str]) -> None:
    typer.echo(json.dumps(result, ensure_ascii=False) if as_json else "\n".join(lines))


@score_app.command("mkqa")
def score_mkqa(
    gold: Annotated[Path, typer.Option(help="MKQA annotations: mkqa.jsonl.gz (or .jsonl).")],
    predictions: Annotated[Path, typer.Option(help="A directory of <lang>.jsonl, or one file for one language.")],
    langs: Annotated[str, typer.Option(help="MKQA locales to score, comma-separated (en, ja, zh_cn …).")],
    mode: Annotated[str, typer.Option(help="official (the paper's scorer, quirks kept) | improved.")] = "improved",
    as_json: AsJson = False,
) -> None:
    """EM and F1 per language and their macro average, in the official or the improved mode."""
    from tasks.metrics.mkqa import score_files

    try:
        result = score_files(gold, predictions, split_list(langs), mode)  # type: ignore[arg-type]
    except BabelbenchError as exc:
        fail(exc)
    lines = [f"MKQA ({result['mode']} mode)"] + [
        f"  {lang:<6} F1 {m['best_f1']}  EM {m['best_em']}  answerable F1 {m['best_answerable_f1']}"
        f"  unanswerable EM {m['best_unanswerable_em']}" for lang, m in result["languages"].items()]
    _show(result, as_json, lines + [f"  macro  F1 {result['macro']['best_f1']}  EM {result['macro']['best_em']}"])


@score_app.command("eclektic")
def score_eclektic(
    judgements: Annotated[Path, typer.Option(help='JSON lines {"question_id", "source_lang", "lang", "correct"}.')],
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap intervals.")] = 0,
    as_json: AsJson = False,
) -> None:
    """Overall success and transfer pooled over (question, target language) pairs, with the source x target matrix."""
    from tasks.metrics.eclektic import score_eclektic_file

    try:
        result = score_eclektic_file(judgements, seed=seed)
    except BabelbenchError as exc:
        fail(exc)
    ci = result["ci"]
    _show(result, as_json, [
        f"overall success {result['overall_success']}  95% CI {ci['overall_success']}",
        f"transfer        {result['transfer']}  95% CI {ci['transfer']}",
        f"source accuracy {result['source_accuracy']}  over {result['n_pairs']} pairs"])


@score_app.command("arena")
def score_arena(
    battles: Annotated[Path, typer.Option(help='JSON lines {"query_id", "lang", "model_a", "model_b",'
                                               ' "winner": "a"|"b"|"tie"}.')],
    bootstrap: Annotated[int, typer.Option(help="Tournaments resampling the queries, for the intervals.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    ties: Annotated[str, typer.Option(help="drop (ignore ties) | half (half a win to each side).")] = "drop",
    as_json: AsJson = False,
) -> None:
    """Bradley–Terry ratings (natural-log logits, mean zero) with 95% intervals and rank intervals."""
    from tasks.arena.bradley_terry import ratings, read_battles

    try:
        result = ratings(read_battles(battles), bootstrap=bootstrap, seed=seed, ties=ties)  # type: ignore[arg-type]
    except BabelbenchError as exc:
        fail(exc)
    ordered = sorted(result["models"].items(), key=lambda item: -item[1]["rating"])
    _show(result, as_json, [f"{result['n_battles']} battles ({result['ties']} ties, {ties})"] + [
        f"  {name:<24} {m['rating']:+.3f}  95% CI [{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"
        f"  rank {m['rank_low']}–{m['rank_high']}" for name, m in ordered])
