"""``babelbench score``: score predictions made elsewhere, file in, one JSON object out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

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
    from tasks.metrics import score_files

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
    from tasks.metrics import score_eclektic_file

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
    """Bradley–Terry ratings (natural-log logits, mean zero) with 95% intervals and rank intervals, and the judge's
    consistency across both orders and first-position rate (every line of the file is one of its verdicts)."""
    from tasks.arena import (
        DEFAULT_METHOD,
        RATING_METHODS,
        OrderedVerdict,
        agreement_text,
        judge_agreement,
        rating_order,
        rating_text,
        read_battles,
    )

    try:
        read = read_battles(battles)
        result = RATING_METHODS.get(DEFAULT_METHOD).ratings(read, bootstrap=bootstrap, seed=seed,
                                                            ties=ties)  # type: ignore[arg-type]
    except BabelbenchError as exc:
        fail(exc)
    result["judge"] = judge_agreement(OrderedVerdict(b.query_id, b.lang, b.model_a, b.model_b, b.winner) for b in read)
    ordered = sorted(result["models"].items(), key=lambda item: (-rating_order(item[1]), item[0]))
    _show(result, as_json, [f"{result['n_battles']} battles ({result['ties']} ties, {result['order_flips']} order"
                            f" flips rated as ties, {ties})", f"  {agreement_text(result['judge'])}"]
          + [f"  {name:<24} {rating_text(m)}" for name, m in ordered])


@score_app.command("xrag")
def score_xrag(
    judgements: Annotated[Path, typer.Option(help='JSON lines {"question_id", "lang", "setting", "model", "judge",'
                                                  ' "verdict": "yes"|"no"|null, "language_ok": true|false|null}.')],
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap intervals.")] = 0,
    as_json: AsJson = False,
) -> None:
    """Accuracy (%) per model, setting and language: correct when a strict majority of the whole panel (every judge
    in the file) says yes and the answer is in the question's language; 'all' pools the non-English languages."""
    from tasks.metrics import score_xrag_file

    try:
        result = score_xrag_file(judgements, seed=seed)
    except BabelbenchError as exc:
        fail(exc)
    lines = [f"XRAG accuracy (%), {result['incomplete_panels']} incomplete panels"]
    for model, settings in result["models"].items():
        for setting, langs in settings.items():
            lines += [f"  {model:<24} {setting:<24} {lang:<4} {_number(m['accuracy'])}"
                      f"  95% CI [{_number(m['ci_low'])}, {_number(m['ci_high'])}]  n {m['n']}"
                      for lang, m in langs.items()]
    _show(result, as_json, lines)


def _number(value: float | None) -> str:
    """A percentage to one decimal, or n/a where it is undefined (no answer, one question for an interval)."""
    return "n/a" if value is None else f"{value:.1f}"


@score_app.command("features")
def score_features(
    responses: Annotated[Path, typer.Option(help='JSON lines {"query_id", "lang", "model", "text"} (the raw reply,'
                                                 ' "##Reason: … ##Answer: …" with [doc_id] citations).')],
    passages: Annotated[Path, typer.Option(help='JSON lines {"query_id", "doc_id", "text"}: the passages shown.')],
    qrels: Annotated[Path, typer.Option(help="TREC qrels (qid 0 docid rel), MIRACL's files.")],
    reference: Annotated[Optional[Path], typer.Option(help='JSON lines {"query_id", "answer"}: gold answers for'
                                                           " answer_bleu and answer_rougeL.")] = None,
    only: Annotated[Optional[str], typer.Option(help="Features, comma-separated (default: the deterministic ones;"
                                                     " support_entailment, support_neutral, reranker_score by"
                                                     " name).")] = None,
    nli_model: Annotated[Optional[str], typer.Option(help="NLI cross-encoder for support_entailment/neutral.")] = None,
    reranker_model: Annotated[Optional[str], typer.Option(help="Cross-encoder for reranker_score.")] = None,
    as_json: AsJson = False,
) -> None:
    """MIRAGE's heuristic features of each response, and their mean per model."""
    from tasks.features import FeatureModels, score_feature_files

    chosen = {"nli": nli_model, "reranker": reranker_model}
    try:
        result = score_feature_files(responses, passages, qrels, reference, only=split_list(only) if only else None,
                                     models=FeatureModels(**{k: v for k, v in chosen.items() if v}))
    except BabelbenchError as exc:
        fail(exc)
    lines = [f"{len(result['responses'])} responses; mean per model (n/a: no response has the feature)"]
    for model, means in result["models"].items():
        lines.append(f"  {model}")
        lines += [f"    {name:<24} {'n/a' if mean is None else f'{mean:.4f}'}" for name, mean in means.items()]
    _show(result, as_json, lines)


@score_app.command("benchmark")
def score_benchmark(
    benchmark: Annotated[str, typer.Option(help="A built or imported benchmark, of any recipe.")],
    model: Annotated[str, typer.Option(help="Whose stored responses to score.")],
    judges: Annotated[Optional[str], typer.Option(help="Judges whose stored verdicts count, comma-separated"
                                                       " (recipes that judge).")] = None,
    mode: Annotated[Optional[str], typer.Option(help="The recipe's scoring mode (MKQA: improved | official).")] = None,
    as_json: AsJson = False,
) -> None:
    """A model's stored responses scored by the benchmark's recipe — whichever package it comes from — without
    writing the leaderboard (`eval` does)."""
    from flows.cli_support import with_warehouse
    from tasks.metrics import ScoringConfig
    from tasks.qa import benchmark_definition
    from tasks.recipe import recipe as recipe_of

    def scored(wh):  # noqa: ANN001, ANN202 - a Warehouse in, the recipe's scores out
        protocol = recipe_of(benchmark_definition(wh, benchmark)[0])
        if mode and mode not in protocol.score_modes:
            raise BabelbenchError(f"recipe {protocol.name!r} scores in {', '.join(protocol.score_modes)}, not {mode!r}")
        # the one scoring choice a recipe has today is MKQA's mode, a field of the scoring configuration
        config = ScoringConfig(mkqa_mode=mode) if mode and len(protocol.score_modes) > 1 else ScoringConfig()
        scores, note = protocol.score(wh, benchmark, model, split_list(judges) if judges else [], config)
        return protocol, scores, note

    protocol, scores, note = with_warehouse(scored, read_only=True)
    rows = [{"setting": s.setting, "lang": s.lang, "subset": s.subset, "metric": s.metric, "value": s.value,
             "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n} for s in scores]
    lines = [f"{benchmark} ({protocol.name}), {model}{note}"] + [
        f"  {r['setting']:<24} {r['lang']:<6} {r['metric']:<20} {r['value']}" for r in rows
        if r["subset"] == "all" and r["metric"] == protocol.headline]
    _show({"benchmark": benchmark, "recipe": protocol.name, "model": model, "scores": rows}, as_json, lines)
