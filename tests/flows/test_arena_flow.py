"""The arena end to end: battles in both orders on sampled queries, ratings, judge consistency, budget resume."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path

import pytest
import yaml

from flows.arena import ArenaParams, arena_flow
from tasks.arena.battles import ArenaConfig, JudgingEstimate, judged_pairs
from tasks.llm import Budget
from tasks.warehouse.db import Warehouse
from tests.evaluation.test_arena_report import _rendered_dom
from tests.support.fake_llm_server import FakeLLMServer, prompt_of

pytestmark = pytest.mark.usefixtures("prefect_api")

ANSWERS = {"s1": "The Velna [d1].", "s2": "The Orvik [d1].", "s3": "I don't know."}
UNJUDGED = {"s4": "The Velna, of course [d1]."}  # answered, but not entered in the arena: its rating is predicted
QUALITY = {"Velna": 2, "Orvik": 1, "know": 0}


def _judge(prompt: str) -> str:
    """Prefers the right river, then any river, then a refusal — whichever position it is shown in — except on the
    question about river 4 (sampled in both languages), where it prefers the opposite: every system wins and loses
    somewhere, so every rating is finite (a strict order on every query would leave the best unbounded above)."""
    first = re.search(r"\[Answer A\]\n(.*)\n", prompt).group(1)
    second = re.search(r"\[Answer B\]\n(.*)\n", prompt).group(1)
    sign = -1 if "Which river, 4?" in prompt else 1
    score = [sign * next(v for k, v in QUALITY.items() if k in answer) for answer in (first, second)]
    verdict = "C" if score[0] == score[1] else "A" if score[0] > score[1] else "B"
    return f"Answer {verdict} is better supported.\nVerdict: [[{verdict}]]"


@pytest.fixture
def arena_home(home: Path, server: FakeLLMServer) -> Path:
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "judge", "backend": "openai", "model": "judge-model", "base_url": server.base_url, "mode": "chat",
         "max_concurrency": 4, "timeout": 20}]}))
    documents = json.dumps([{"doc_id": "d1", "title": "Velna", "text": "The Velna is the river.", "role": "support"}])
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('m', 'mirage', ['en', 'de'], 'g', '{}', now())")
        for lang in ("en", "de"):
            for n in range(5):
                instance = f"{n}|rag|{lang}"
                cur.execute("INSERT INTO instances VALUES ('m', ?, ?, 'mirage', 'rag', ?, ?, '', ?, NULL, NULL, ?, 0,"
                            " 'fp', NULL, NULL, NULL)", [instance, f"{lang}:{n}", lang, f"Which river, {n}?", lang, documents])
                for model, answer in (ANSWERS | UNJUDGED).items():
                    cur.execute("INSERT INTO responses VALUES ('m', ?, ?, 'rag', ?, 'ok', NULL, ?, ?, ['d1'], 1, 1,"
                                " 0.1, NULL, 'answer_mirage', 'fp', NULL, NULL, NULL, NULL, NULL)",
                                [instance, model, lang, answer, answer])
    server.answer("[Answer A]", _judge)
    return home


def _ratings(home: Path, lang: str = "all") -> dict[str, dict]:
    with Warehouse(home) as wh:
        return {r["model"]: r for r in wh.query_dicts("SELECT * FROM arena_ratings WHERE lang = ?", [lang])}


def test_every_pair_is_judged_in_both_orders_and_rated(arena_home: Path, server: FakeLLMServer) -> None:
    params = ArenaParams(benchmark="m", models=["s1", "s2", "s3"], judge="judge",
                         arena=ArenaConfig(queries_per_lang=3), bootstrap=50, home=str(arena_home))
    arena_flow(params)
    # 2 languages x 3 sampled queries x 3 pairs x 2 orders
    assert len(server.calls) == 36
    with Warehouse(arena_home) as wh:
        orders = wh.query("SELECT model_a, model_b, count(*) FROM battles GROUP BY ALL ORDER BY ALL")
        statuses = wh.query("SELECT DISTINCT status FROM battles")
    assert [(a, b) for a, b, _ in orders] == [(a, b) for a in ANSWERS for b in ANSWERS if a != b]
    assert {count for *_, count in orders} == {6} and statuses == [("ok",)]
    rated = _ratings(arena_home)
    assert rated["s1"]["rating"] > rated["s2"]["rating"] > rated["s3"]["rating"]
    assert sum(r["rating"] for r in rated.values() if not r["predicted"]) == pytest.approx(0.0, abs=1e-9)
    # 6 queries, one per language reversed: the data do not order the three firmly, but s1 can rank first
    assert rated["s1"]["rank_low"] == 1 and all(r["rating"] is not None for r in rated.values())
    # the judge follows quality, not position: both orders agree, and A wins exactly half the decisive verdicts
    assert rated["s1"]["consistency"] == 1.0 and rated["s1"]["first_position_rate"] == 0.5
    # over 2 languages x 3 queries x 3 pairs judged in both orders, 36 verdicts, none a tie; nothing left out
    assert [rated["s1"][key] for key in ("judged_pairs", "decisive_verdicts", "order_flips", "forfeits",
                                         "no_verdict")] == [18, 36, 0, 0, 0]
    assert set(_ratings(arena_home, "de")) == {"s1", "s2", "s3"}
    # the surrogate judge placed s4 from its features alone, marked as predicted
    assert rated["s4"]["predicted"] and not rated["s1"]["predicted"] and rated["s4"]["n_battles"] == 0
    with Warehouse(arena_home) as wh:
        report = json.loads(wh.scalar("SELECT report FROM surrogate_reports WHERE benchmark = 'm'"))
    # three judged systems are too few to hold any out: no R², τ or importances, and the report says why
    assert set(report["systems"]) == {"s1", "s2", "s3"} and report["importances"] is None
    assert report["not_validated"] == "validation needs at least 5 systems with finite ratings; this run has 3"
    # a rerun with nothing changed asks nothing
    again = arena_flow(params)
    assert {r["status"] for r in again} == {"cached"} and len(server.calls) == 36


def test_a_budget_stopped_arena_resumes_without_asking_twice(arena_home: Path, server: FakeLLMServer) -> None:
    params = ArenaParams(benchmark="m", models=["s1", "s2"], judge="judge", langs=["en"],
                         arena=ArenaConfig(queries_per_lang=4), bootstrap=20, budget=Budget(max_calls=5),
                         home=str(arena_home))
    arena_flow(params)
    with Warehouse(arena_home) as wh:
        assert sorted(s for (s,) in wh.query("SELECT status FROM battles")) == ["ok"] * 5 + ["skipped_budget"] * 3
    arena_flow(params.model_copy(update={"budget": Budget()}))
    prompts = [prompt_of(call.body) for call in server.calls]
    assert len(prompts) == len(set(prompts)) == 8  # 4 queries x 2 orders, each asked once


def test_a_judge_does_not_rate_its_own_system_unless_told() -> None:
    assert judged_pairs(["s1", "s2", "judge"], "judge", ArenaConfig()) == [("s1", "s2"), ("s2", "s1")]
    assert len(judged_pairs(["s1", "s2", "judge"], "judge", ArenaConfig(judge_own_system=True))) == 6


def _prefect_artifact(key: str) -> str:
    """The markdown of the latest Prefect artifact with ``key``, read back from the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async def read() -> str:
        async with get_client() as client:
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                                    sort=ArtifactSort.CREATED_DESC, limit=1)
            return str(artifacts[0].data) if artifacts else ""

    return asyncio.run(read())


def test_the_cost_of_judging_every_language_is_shown_before_the_first_call(arena_home: Path,
                                                                            server: FakeLLMServer) -> None:
    (arena_home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "judge", "backend": "openai", "model": "judge-model", "base_url": server.base_url, "mode": "chat",
         "max_concurrency": 4, "timeout": 20, "price_in": 2.0, "price_out": 10.0}]}))
    shown: list[tuple[str, int]] = []  # (the estimate, how many requests the endpoint had received when it was logged)

    class Snapshot(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("cost estimate"):
                shown.append((record.getMessage(), len(server.calls)))

    logger = logging.getLogger("tasks.stages.arena")
    handler, level = Snapshot(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    params = ArenaParams(benchmark="m", models=["s1", "s2", "s3"], judge="judge", arena=ArenaConfig(queries_per_lang=3),
                         bootstrap=10, budget=Budget(max_usd=0.05), home=str(arena_home))
    try:
        arena_flow(params.model_copy(update={"budget": Budget(max_usd=5.0)}))
        arena_flow(params)  # everything is cached now: nothing left to pay for
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    # by hand: 2 languages x 3 queries = 6 queries; 3 pairs x 2 orders = 6 ordered pairs; 36 requests of at most
    # 256 answer tokens; the prompt's tokens are its characters / 4 (rounded up), read from what reached the endpoint
    assert len(server.calls) == 36
    prompt_tokens = sum(-(-sum(len(m["content"]) for m in call.body["messages"]) // 4) for call in server.calls)
    tokens = prompt_tokens + 36 * 256
    usd = (prompt_tokens * 2.0 + 36 * 256 * 10.0) / 1_000_000
    (first, calls_before), (again, _) = shown
    assert calls_before == 0
    assert f"6 queries x 6 ordered pairs = 36 verdicts; not yet cached: at most ~{tokens} tokens, ~${usd:.4f};" \
        " budget max_usd=5.0" in first
    assert "at most ~0 tokens, ~$0.0000; budget max_usd=0.05" in again
    assert again.removeprefix("cost estimate: ") in _prefect_artifact("babelbench-arena-estimate")
    import mlflow

    from tasks.tracking import tracking_uri

    with Warehouse(arena_home) as wh:
        first_run = wh.scalar("SELECT mlflow_run_id FROM runs WHERE flow = 'arena' ORDER BY started_at LIMIT 1")
    mlflow.set_tracking_uri(tracking_uri(arena_home))
    assert float(mlflow.get_run(first_run).data.tags["babelbench.estimate.judge_usd"]) == pytest.approx(usd, abs=1e-6)


def test_an_estimate_over_the_budget_says_so() -> None:
    estimate = JudgingEstimate("j", queries=10, pairs=6, tokens=50_000, usd=0.5)
    assert estimate.describe(Budget(max_usd=0.1, max_calls=20)) == (
        "judging by j: 10 queries x 6 ordered pairs = 60 verdicts; not yet cached: at most ~50000 tokens, ~$0.5000;"
        " budget max_usd=0.1, max_calls=20 (the estimate exceeds max_usd: judging stops there, a rerun with a larger"
        " budget resumes)")
    assert estimate.describe(Budget()).endswith("~$0.5000; no budget limit")


def test_the_report_is_one_self_contained_file_that_a_browser_renders(arena_home: Path, tmp_path: Path) -> None:
    import mlflow

    from flows.report import ReportParams, report_flow
    from tasks.tracking import tracking_uri

    arena_flow(ArenaParams(benchmark="m", models=["s1", "s2", "s3"], judge="judge",
                           arena=ArenaConfig(queries_per_lang=3), bootstrap=50, home=str(arena_home)))
    out = tmp_path / "report.html"
    report_flow(ReportParams(benchmark="m", out=str(out), home=str(arena_home)))
    html = out.read_text(encoding="utf-8")
    # nothing to run or fetch: no script, no stylesheet link, no src/href to another resource (xmlns are names)
    assert "<script" not in html and "<link" not in html
    assert re.findall(r'(?:src|href)="(?!#|data:)([^"]+)"', html) == []  # in-page anchors and data: URIs only
    # the file and its plots are in the evaluation's MLflow run (here the arena's), not in the report's own
    with Warehouse(arena_home) as wh:
        runs = dict(wh.query("SELECT flow, mlflow_run_id FROM runs"))
    mlflow.set_tracking_uri(tracking_uri(arena_home))
    logged = {a.path for a in mlflow.artifacts.list_artifacts(run_id=runs["arena"])}
    assert {"report.html", "plots"} <= logged
    assert {a.path for a in mlflow.artifacts.list_artifacts(run_id=runs["arena"], artifact_path="plots/judge")} == {
        "plots/judge/intervals.svg", "plots/judge/heatmap.svg"}
    assert "report.html" not in {a.path for a in mlflow.artifacts.list_artifacts(run_id=runs["report"])}
    assert f"the evaluation's MLflow run `{runs['arena']}`" in _prefect_artifact("report-m")
    dom = _rendered_dom(out, tmp_path / "chromium-profile")
    # the browser parsed the ratings table in rating order, and both plots as SVG elements
    ratings_table = dom[dom.index('<table class="ratings">'):]
    ratings_table = ratings_table[:ratings_table.index("</table>")]
    order = [system for system in re.findall(r'<tr data-system="(s\d)"', ratings_table) if system != "s4"]
    assert order == ["s1", "s2", "s3"]
    assert dom.count("<svg") >= 2 and "Judge consistency across both orders: 1.00" in dom
    assert "s4 <em>(predicted from features)</em>" in dom and "Surrogate judge" in dom
    # three judged systems: no validation to show, and the page says why instead of an R² or a "most important feature"
    assert "Not validated: validation needs at least 5 systems with finite ratings; this run has 3" in dom
    assert "R²" not in dom and "Most important feature" not in dom and "data-ablation" not in dom


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the table under the line starting with ``header`` (cells split on runs of 2+ spaces)."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_the_arena_command_ends_with_its_ratings_and_the_leaderboard_shows_them(arena_home: Path) -> None:
    """Two systems on the five English questions, both orders each: the judge prefers s1 except on question 4, and
    s3 has no answer on question 2 (a forfeit in both orders). s1 wins 2 x 3 judged + 2 forfeited = 8 battles, s3
    the 2 of question 4: 10 battles, and the Bradley–Terry logits (mean zero) are ±ln(8/2)/2 = ±ln 2 = ±0.693."""
    from typer.testing import CliRunner

    from flows.cli import app

    with Warehouse(arena_home) as wh, wh.transaction() as cur:
        cur.execute("UPDATE responses SET status = 'call_failed', answer = NULL WHERE instance_id = '2|rag|en'"
                    " AND model = 's3'")
    result = CliRunner().invoke(app, ["--home", str(arena_home), "arena", "--benchmark", "m", "--models", "s1,s3",
                                      "--judge", "judge", "--langs", "en", "--queries-per-lang", "5"])
    assert result.exit_code == 0, result.output
    assert "arena ratings of m, judge judge: Bradley–Terry logits (mean zero) with 95% intervals, ties drop" \
        in result.output
    rows = _table(result.output, "rank  model")
    assert [row[:3] for row in rows] == [["1", "s1", "+0.693"], ["2", "s3", "-0.693"]]
    assert [row[5:7] for row in rows] == [["0", "10"], ["1", "10"]]  # forfeits, battles
    for row in rows:  # each interval holds its rating; the rank interval lies within 1..2
        low, high = (float(end.replace("−∞", "-inf").replace("+∞", "inf")) for end in row[3].strip("[]").split(", "))
        assert low <= float(row[2]) <= high and re.fullmatch(r"[12](–[12])?", row[4])

    board = CliRunner().invoke(app, ["--home", str(arena_home), "leaderboard", "--benchmark", "m"])
    assert board.exit_code == 0, board.output  # no evaluation, only the arena: its ratings, not "run eval first"
    assert _table(board.output, "rank  model") == rows
    as_json = CliRunner().invoke(app, ["--home", str(arena_home), "leaderboard", "--benchmark", "m", "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    assert {(r["model"], round(r["rating"], 3), r["failed_queries"]) for r in json.loads(as_json.output)} == {
        ("s1", 0.693, 0), ("s3", -0.693, 1)}
