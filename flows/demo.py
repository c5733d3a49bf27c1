"""The offline demo: build the bundled sample mirror, run the pipeline on it, backfill a language, say where to look."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from flows.backfill import BackfillParams, backfill_flow
from flows.clir import ClirBuildParams, clir_build_flow, clir_eval_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.demo_qa import (
    JUDGE,
    LIVE_BENCHMARK,
    PUBLISHED,
    LIVE_WINDOW,
    LIVE_XRAG,
    LOCAL_CUTOFF,
    SHOWN_SPLIT,
    XRAG_SAMPLE,
    run_qa_demo,
)
from tasks.pairing import ClirConfig
from tasks.sample import (
    EARLIER_DATE,
    arena_summary,
    build_live_mirror,
    collection_summary,
    corpus_summary,
    judge_summary,
    leaderboard_summary,
    load_questions,
    qa_summary,
    window_summary,
)
from tasks.stages import ClirEvalParams
from tasks.tracking import tracking_uri
from tasks.warehouse import Warehouse, cli_prefix

DEMO_COLLECTION = "demo"
#: The sample's languages the main job leaves out, so the demo can show `babelbench backfill` adding them: Swahili,
#: outside the 18 languages babelbench first shipped rules for, with articles on every topic all others share.
BACKFILL_LANGS = ["sw"]


def _table(columns: list[str], rows: list[tuple]) -> str:
    """Right-aligned columns as wide as their widest cell."""
    widths = [max(len(str(value)) for value in column) for column in zip(columns, *rows)]
    return "\n".join("  " + "  ".join(f"{value!s:>{width}}" for value, width in zip(line, widths))
                     for line in [tuple(columns), *rows])


def _interval(row: dict) -> str:
    """A 95% interval as the demo prints it; one direction alone has none."""
    return "n/a" if row["ci_low"] is None else f"{row['ci_low']:.3f}-{row['ci_high']:.3f}"


def console_script(name: str) -> str:
    """This environment's ``name`` command as a user can type it from here (``.venv/bin/babelbench``)."""
    path = Path(sys.executable).parent / name
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


@dataclass(frozen=True)
class DemoReport:
    rows: list[dict]
    text: str


def run_demo(home: Path) -> DemoReport:
    """Everything on embedded defaults: a file:// mirror, the DuckDB warehouse, a local MLflow store."""
    mirror, added = build_live_mirror(home / "sample-mirror")
    langs = [lang for lang in mirror.langs if lang not in BACKFILL_LANGS]
    # the month-earlier dump first, then the current one: the articles only the later one has are new
    rows = corpus_flow(CorpusParams(langs=langs, source=mirror.root.as_uri(), date=EARLIER_DATE, home=str(home),
                                    progress=False))
    rows += corpus_flow(CorpusParams(langs=langs, source=mirror.root.as_uri(), home=str(home), progress=False))
    # The sample is tiny: keep every language (the paper's 10,000-document floor would drop them all).
    clir = ClirConfig(min_documents=10)
    rows += clir_build_flow(ClirBuildParams(name=DEMO_COLLECTION, langs=langs, multi=True, clir=clir, home=str(home)))
    metrics = clir_eval_flow(ClirEvalParams(name=DEMO_COLLECTION, ranker="bm25", split="all", home=str(home)))
    mean = next(m for m in metrics if m["metric"] == "ndcg@10" and m["src_lang"] == "all")
    rows += run_qa_demo(home, langs)
    backfilled = backfill_flow(BackfillParams(langs=BACKFILL_LANGS, home=str(home)))
    rows += backfilled
    backfill = backfill_section(backfilled, latest_backfill_report())
    with Warehouse(home) as wh:
        qa_columns, qa_rows = qa_summary(wh)
        board_columns, board_rows = leaderboard_summary(wh)
        arena_columns, arena_rows = arena_summary(wh, XRAG_SAMPLE, JUDGE)
        judge_columns, judge_rows = judge_summary(wh)
        window_columns, window_rows = window_summary(wh, SHOWN_SPLIT)
        columns, summary = corpus_summary(wh)
        collection = collection_summary(wh, DEMO_COLLECTION)
        where, bb = wh.path, cli_prefix(wh, console_script("babelbench"))
    table = _table(columns, summary)
    text = f"""
Corpus built from the bundled sample ({', '.join(langs)}, dump date {mirror.date}; {', '.join(BACKFILL_LANGS)} added by the
backfill below):
{table}

CLIR collections (BI: every ordered pair; MULTI: topics in all languages):
{_table(["collection", "directions", "queries", "qrels"], collection)}
Cross-lingual BM25 on them: mean NDCG@10 {mean['value']:.3f} (95% CI {_interval(mean)}) over {mean['n_queries']} directions

QA benchmarks written by the local model (parse / QC / gate statuses; instances per setting and language):
{_table(qa_columns, qa_rows)}

The local model and three baselines (abstain always declines; extractive copies the likeliest passage sentence;
oracle gives the gold answer, citing the gold passages) evaluated on the benchmarks above, on the bundled
XRAG-format sample ({XRAG_SAMPLE}: {len(load_questions())} cross-document questions in German and French, written
from the sample articles) and on the bundled MKQA-format sample. Judged by `reference-judge`, a deterministic baseline that
compares each answer with the gold answer by token overlap: it shows the scorers at work offline, and is not a
judge to trust (name real judges with `babelbench eval --judges a,b,c`, models of your models.yaml: see the
README). A working scorer puts oracle above extractive above abstain, with intervals apart (closed book, as on
MKQA and ECLEKTIC, extractive has nothing to copy and declines like abstain); NULL: undefined (e.g. transfer when
no source answer was accepted); percentages on a 0-100 scale; failed: responses that failed; judge_failed:
answered responses without a readable verdict:
{_table(board_columns, board_rows)}

Live benchmarks: the sample mirror has two dumps, {EARLIER_DATE} and {mirror.date}; the later adds the articles of a
football league, its clubs and their derby in every language, and single-language local topics ({len(added)} topics:
{', '.join(added)}). Each article is dated by the first dump it appeared in. {LIVE_XRAG} and
{LIVE_BENCHMARK} are built from the new articles only (`qa build --window {LIVE_WINDOW}`); xrag, built over the
whole later dump, has questions on old and new articles. `local` is registered with the knowledge cutoff
{LOCAL_CUTOFF}, the earlier dump's day (the baselines have none: unknown). Each model's closed-book accuracy by
window (before_cutoff: a supporting article was in the earlier dump; after_cutoff: every one is new since) with its
95% interval and n (questions), and the contamination gap, before minus after, with its paired bootstrap interval.
XRAG asks closed-book questions in English only, so this is its English row. The local model answers questions it
wrote itself, judged against its own gold answers: the numbers show the split at work, not a finding about
contamination. The ECLEKTIC benchmarks are split the same way over question pairs, which need a translation that
passed the gate (few from the local model): `{bb} leaderboard --benchmark {LIVE_BENCHMARK}`:
{_table(window_columns, window_rows)}

Every judge answers one JSON object (a short justification, then the verdict), held to that schema where the
backend can (the local model decodes under a grammar made from it); a reply not plainly yes or no is never
guessed: it is judge_failed, counted here per judge and per check:
{_table(judge_columns, judge_rows)}

An arena on {XRAG_SAMPLE}: every pair of the four systems on every question, both orders, judged by
`reference-judge` (the answer with the higher token F1 against the gold answer wins, equal ones tie; a system
without an answer loses the pair as a forfeit). Bradley-Terry ratings with 95% bootstrap intervals of the rating
and of the rank; a system that never lost (or never won) has no finite rating, its interval open on that side.
The judge's consistency (pairs judged alike in both orders) and first-position rate count only its own verdicts,
each shown with its denominator (n/a: it decided none); forfeits and battles without a verdict are left out, and counted:
{_table(arena_columns, arena_rows)}

Backfill: `{bb} backfill --langs {','.join(BACKFILL_LANGS)}` after all of the above — {', '.join(BACKFILL_LANGS)} joins every corpus,
collection, benchmark (as a translation target), evaluation and arena; only its cells compute, the rest are cache hits:
{backfill}

Where to look:
  warehouse   {where}
              {bb} sql "SELECT * FROM corpus_summary"
              {bb} sql "SELECT stage, cell, status, rows, issues FROM stage_runs"
              {bb} sql "SELECT * FROM eval_metrics WHERE metric = 'ndcg@10'"
              {bb} sql "SELECT item_id, qc_status, question, answer FROM qa_status"
              {bb} sql "SELECT item_id, tgt_lang, gate, reason FROM translations"
  export      {bb} clir export --name {DEMO_COLLECTION} --out ./clir-export
  instances   {home / 'exports'}  (<benchmark>/<setting>.<lang>.jsonl)
  review      {bb} review export --benchmark eclektic --out review.csv
  leaderboard {bb} leaderboard --benchmark {XRAG_SAMPLE}
              {bb} leaderboard --benchmark xrag-live   (the live family's months pooled)
  report      {home / 'report.html'}  (self-contained HTML: ratings, intervals, heatmap, judge consistency, metrics)
  published   {home / PUBLISHED / XRAG_SAMPLE}  ({XRAG_SAMPLE} as a Hugging Face dataset: Parquet, README.md card, croissant.json;
              `{bb} import hf --source {home / PUBLISHED / XRAG_SAMPLE}` reads it into another home)
  MLflow UI   {console_script('mlflow')} ui --backend-store-uri {tracking_uri(home)}   (then http://127.0.0.1:5000)
  Prefect UI  make serve   (then http://127.0.0.1:4200 — flow runs corpus, clir-build, clir-eval, qa-build, translate, instances, evaluate, arena, report)
  sample      {mirror.root}  (a dumps.wikimedia.org-style mirror: CirrusSearch, XML multistream, page_props, Wikidata)
"""
    return DemoReport(rows, text)


def latest_backfill_report() -> list[str]:
    """The per-scope lines of the latest ``backfill`` markdown artifact (what each corpus, collection, benchmark,
    evaluation and arena gained, and what was skipped and why), read back from the Prefect API."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async def read() -> str:
        async with get_client() as client:
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["backfill"])),
                sort=ArtifactSort.CREATED_DESC, limit=1)
            return str(artifacts[0].data) if artifacts else ""

    return [line[2:] for line in asyncio.run(read()).splitlines() if line.startswith("- ")]


def backfill_section(rows: list[dict], summary: list[str]) -> str:
    """The backfill's report: its summary lines, then per stage the cells it computed and how many were cache hits."""
    stages: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        stages.setdefault(row["stage"], {}).setdefault(row["status"], []).append(row["cell"])
    counts = _table(["stage", "computed", "cached", "failed"], [
        (stage, len(by.get("computed", [])), len(by.get("cached", [])), len(by.get("failed", []))) for stage, by in stages.items()])
    cells = ["computed cells", *(_cells(by.get("computed", [])) for by in stages.values())]
    lines = "\n".join(f"  {line}" for line in summary)
    return lines + "\n" + "\n".join(f"{row}  {cell}" for row, cell in zip(counts.splitlines(), cells))


def _cells(cells: list[str], shown: int = 6) -> str:
    """The first few distinct cells of a stage, and how many more."""
    distinct = list(dict.fromkeys(cells))
    more = f" … (+{len(distinct) - shown})" if len(distinct) > shown else ""
    return ", ".join(distinct[:shown]) + more
