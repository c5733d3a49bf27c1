"""The markdown artifact of a flow run says what was computed, cached, failed and skipped, and what the run cost.

An MKQA benchmark is imported through the ``import`` flow (the flow the
``import`` deployment and ``babelbench import`` run), then evaluated with a
priced model on a loopback endpoint under a budget of three calls: three
answers are paid, the others are ``skipped_budget``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.imports import ImportParams, import_flow
from tasks.llm import Budget
from tasks.metrics.mkqa_data import read_gold
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")
SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"
ENGLISH = ["412 km", "Petra Voss", "1871", "Yes.", "Jonas Halvar", "eleven", "Blue.", "I don't know."]
PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per million tokens


def _summary(flow_run_id: UUID, key: str) -> str:
    """The markdown artifact ``key`` of one flow run, read back through the Prefect API."""
    async def read() -> list[Any]:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowRunFilter, FlowRunFilterId

        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                               flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    [artifact] = asyncio.run(read())
    assert artifact.type == "markdown"
    return artifact.data


def test_the_run_artifact_reports_skipped_items_and_what_the_run_paid(home: Path, server: FakeLLMServer) -> None:
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "priced", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat",
         "max_concurrency": 1, "price_in": PRICE_IN, "price_out": PRICE_OUT}]}))
    for example, answer in zip(read_gold(SAMPLE), ENGLISH, strict=True):
        server.answer(example.queries["en"], answer)
    imported = import_flow(ImportParams(dataset="mkqa", source=str(SAMPLE), name="mk", langs=["en"], home=str(home)))
    assert [(r["stage"], r["cell"], r["status"]) for r in imported] == [("import", "mk", "computed")]

    state = evaluate_flow(EvaluateParams(benchmark="mk", models=["priced"], judges=[], home=str(home),
                                         budget=Budget(max_calls=3)), return_state=True)
    rows = state.result()
    assert {r["stage"]: r["status"] for r in rows} == {"inference": "computed", "scoring": "computed"}
    with Warehouse(home) as wh:
        statuses = dict(wh.query("SELECT status, count(*) FROM responses WHERE benchmark = 'mk' GROUP BY ALL"))
        tokens_in, tokens_out = wh.query("SELECT sum(input_tokens), sum(output_tokens) FROM llm_calls")[0]
    assert statuses == {"ok": 3, "skipped_budget": 5} and len(server.calls) == 3
    usd = (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000

    markdown = _summary(state.state_details.flow_run_id, "babelbench-evaluate-summary")
    assert "2 cells computed, 0 cache hits, 0 failed, 0 skipped (not run: a cell upstream failed);" \
           " 5 items skipped by the budget." in markdown
    assert (f"- cost: 3 model calls paid, {tokens_in + tokens_out} tokens, ${usd:.6f} (budget: max_calls 3; reached)"
            in markdown)
    assert "- inference[mk/closed_book/en/priced]: 5 skipped_budget" in markdown

    # the rerun pays only for the five skipped answers, and its artifact says so; a third run costs nothing
    state = evaluate_flow(EvaluateParams(benchmark="mk", models=["priced"], judges=[], home=str(home)),
                          return_state=True)
    markdown = _summary(state.state_details.flow_run_id, "babelbench-evaluate-summary")
    assert len(server.calls) == 8 and "- cost: 5 model calls paid," in markdown
    assert "0 items skipped by the budget." in markdown and "Items skipped by the budget" not in markdown
    state = evaluate_flow(EvaluateParams(benchmark="mk", models=["priced"], judges=[], home=str(home)),
                          return_state=True)
    markdown = _summary(state.state_details.flow_run_id, "babelbench-evaluate-summary")
    assert "0 cells computed, 2 cache hits" in markdown and "- cost: 0 model calls paid, 0 tokens, $0.000000" in markdown


def test_the_import_command_runs_the_import_flow(home: Path) -> None:
    runner = CliRunner()
    command = ["--home", str(home), "import", "mkqa", "--source", str(SAMPLE), "--name", "mk", "--langs", "en,de"]
    first = runner.invoke(app, command)
    assert first.exit_code == 0, first.output
    assert "import" in first.output and "computed" in first.output
    again = runner.invoke(app, command)
    assert again.exit_code == 0 and "cached" in again.output, again.output
    with Warehouse(home) as wh:
        assert wh.query("SELECT flow, status FROM runs ORDER BY started_at") == [("import", "completed")] * 2
        assert wh.scalar("SELECT count(*) FROM instances WHERE benchmark = 'mk'") == 16

    missing = runner.invoke(app, ["--home", str(home), "import", "xrag", "--source", str(home / "nope.jsonl")])
    assert missing.exit_code == 2 and "nope.jsonl: no such file or directory" in missing.output
    bad = runner.invoke(app, [*command[:-1], "en,ko", "--force"])
    assert bad.exit_code == 1 and "ko cannot be imported" in bad.output
