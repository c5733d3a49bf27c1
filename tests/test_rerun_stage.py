"""Rerunning one stage on one scope: that stage and its descendants recompute, everything upstream is cached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.evaluate import EvaluateParams, evaluate_flow
from flows.rerun import RerunParams, rerun_stage_flow
from tasks.errors import ConfigError
from tasks.warehouse.db import Warehouse
from tests.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")
GOLD = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])


@pytest.fixture
def evaluated(home: Path, server: FakeLLMServer) -> Path:
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "m", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat"}]}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en', 'de'], 'import:x', '{}', now())")
        for lang, question in (("en", "Which river?"), ("de", "Welcher Fluss?")):
            cur.execute("INSERT INTO instances VALUES ('mk', ?, '1', 'mkqa', 'closed_book', ?, ?, 'Velna', 'en', NULL,"
                        " NULL, '[]', 0, 'fp', ?)", [f"1|closed_book|{lang}", lang, question, GOLD])
    server.answer("?", "Velna")
    rows = evaluate_flow(EvaluateParams(benchmark="mk", models=["m"], judges=[], home=str(home)))
    assert {r["status"] for r in rows} == {"computed"}
    return home


def _statuses(rows: list[dict]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["stage"], set()).add(row["status"])
    return found


def test_rerunning_scoring_recomputes_only_scoring(evaluated: Path, server: FakeLLMServer) -> None:
    rows = rerun_stage_flow(RerunParams(stage="scoring", scope="mk", home=str(evaluated)))
    assert _statuses(rows) == {"inference": {"cached"}, "scoring": {"computed"}}


def test_rerunning_inference_in_one_language_recomputes_it_and_what_follows_without_paying_again(
        evaluated: Path, server: FakeLLMServer) -> None:
    calls = len(server.calls)
    rows = rerun_stage_flow(RerunParams(stage="inference", scope="mk", langs=["de"], home=str(evaluated)))
    assert [(r["stage"], r["cell"], r["status"]) for r in rows if r["stage"] == "inference"] == [
        ("inference", "mk/closed_book/de/m", "computed")]
    assert _statuses(rows)["scoring"] == {"computed"}
    assert len(server.calls) == calls  # the answers come from the call cache


def test_a_scope_never_run_is_a_clear_error(evaluated: Path) -> None:
    with pytest.raises(ConfigError, match="no earlier evaluate run on 'other'"):
        rerun_stage_flow(RerunParams(stage="judging", scope="other", home=str(evaluated)))
