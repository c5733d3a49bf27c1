"""A real OpenAI-compatible server — llama-cpp-python's, on the packaged Gemma — as judge, answering model, arena
judge and pre-screen, its structured-output mode learned by ``models check``, and the faults a user's server has.

The server refuses ``response_format: json_schema`` with an HTTP 500 holding a validation error, takes
``json_object`` with the schema on chat, and ignores every OpenAI field on its completion route, where only its
own ``grammar`` holds a reply to a schema.  Before the negotiation, every verdict of its chat judge was a 500 retried
five times and no verdict was read.  The server is started once for the module (about 3 s); the fault tests start
their own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flows.arena import ArenaParams, arena_flow
from flows.cli import app
from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.arena.battles import ArenaConfig
from tasks.imports.common import import_dataset
from tasks.imports.responses import import_responses
from tasks.inference.prompting import InferenceConfig
from tasks.llm import LLMClient, load_registry
from tasks.llm import client as client_module
from tasks.qa.qc import QcConfig, prescreen
from tasks.sample.xrag_sample import write_xrag_sample
from tasks.warehouse.db import Warehouse
from tests.support.llama_server import LlamaServer, altered_gguf, require_server

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]

ALIAS = "gemma-270m"
MKQA_SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    require_server()
    with LlamaServer(tmp_path_factory.mktemp("llama-server") / "server.log", alias=ALIAS) as server:
        yield server


def _entry(name: str, server: LlamaServer, mode: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "backend": "openai", "model": server.model_id, "base_url": server.base_url, "mode": mode,
            "max_concurrency": 2, "timeout": 120.0} | extra


def _registry(home: Path, *entries: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    baselines = [{"name": name, "backend": "baseline", "model": name} for name in ("oracle", "abstain")]
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [*baselines, *entries]}), encoding="utf-8")


def _cli(home: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--home", str(home), *args])


@pytest.fixture
def served_home(home: Path, llama_server: LlamaServer, tmp_path: Path) -> Path:
    """A home whose registry has the server as a chat judge and a completion model, an XRAG benchmark ``xs`` of 18
    instances (9 sample questions in German and French) that the imported system ``sys`` answered, and ``x2``, one
    question in both languages, for what the server itself answers (a 270M model on 2 cores: seconds a call)."""
    _registry(home, _entry("served-chat", llama_server, "chat"), _entry("served", llama_server, "completion"))
    lines = write_xrag_sample(tmp_path / "xrag.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "xs.jsonl").write_text("\n".join(lines[:18]) + "\n", encoding="utf-8")
    (tmp_path / "x2.jsonl").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    with Warehouse(home) as wh:
        import_dataset(wh, "xrag", tmp_path / "xs.jsonl", "xs", None)
        import_dataset(wh, "xrag", tmp_path / "x2.jsonl", "x2", None)
        instances = wh.query("SELECT instance_id, answer FROM instances WHERE benchmark = 'xs' ORDER BY instance_id")
        # half right (the gold itself), half wrong: a judge that reads every verdict must tell them apart somehow
        answers = [{"instance_id": instance, "text": gold if n % 2 == 0 else "Paris is the capital of France."}
                   for n, (instance, gold) in enumerate(instances)]
        (tmp_path / "sys.jsonl").write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers))
        import_responses(wh, "xs", "sys", tmp_path / "sys.jsonl", load_registry(home=home).names)
    assert len(instances) == 18
    return home


def test_models_check_learns_each_api_s_structured_output_and_remembers_it(served_home: Path,
                                                                            llama_server: LlamaServer) -> None:
    chat = _cli(served_home, "models", "check", "served-chat")
    assert chat.exit_code == 0, chat.output
    lines = chat.output.splitlines()
    assert any(line.startswith("structured output") and "json_object_schema" in line and "learned now" in line
               for line in lines), chat.output
    # the refusal in the server's own words, with the field it named
    assert "json_schema not taken: refused: HTTP 500: field response_format.type refused:" in chat.output
    assert "Input should be 'text' or 'json_object'" in chat.output
    assert any(line.startswith("listed") and f"yes (the server lists: {ALIAS})" in line for line in lines)
    assert any(line.startswith("APIs") and "chat: yes" in line and "completion: yes" in line for line in lines)
    assert lines[-1].split() == ["verdict", "usable"]

    completion = _cli(served_home, "models", "check", "served", "--json")
    assert completion.exit_code == 0, completion.output
    found = json.loads(completion.output)
    # the completion route takes every OpenAI field and ignores it: the replies did not follow the probe's schema
    assert found["structured"] == "grammar" and found["structured_source"] == "learned now"
    assert set(found["refused"]) == {"json_schema", "json_object_schema"}
    assert all(why.startswith("accepted, but the reply did not follow the schema") for why in found["refused"].values())
    assert found["usage_reported"] is True and found["output_tokens"] > 0 and found["tokens_per_s"] > 0
    assert found["usable"] is True and found["reason"] is None

    listed = _cli(served_home, "models", "list", "--json")
    modes = {entry["name"]: entry["structured"] for entry in json.loads(listed.output)}
    assert modes == {"oracle": None, "abstain": None, "served-chat": "json_object_schema", "served": "grammar"}

    _registry(served_home, _entry("served-chat", llama_server, "chat"), _entry("typo", llama_server, "chat",
                                                                             model="gemma-207m"))
    wrong = _cli(served_home, "models", "check", "typo")
    assert wrong.exit_code == 1
    assert f"NOT usable: the server does not serve model 'gemma-207m' (it lists: {ALIAS})" in wrong.output

    before = len(llama_server.requests())
    again = _cli(served_home, "models", "check", "served-chat")
    assert again.exit_code == 0 and "remembered from" in again.output
    # remembered: no probe of the ladder this time, so no call was refused (the GETs: the model list, and llama.cpp's
    # /props, which this server lacks)
    posts = [status for method, _, status in llama_server.requests()[before:] if method == "POST"]
    assert posts and set(posts) == {200}


def test_the_server_judges_18_imported_answers_reading_every_verdict_with_no_call_refused_or_retried(
        served_home: Path, llama_server: LlamaServer) -> None:
    """The issue's case: before, each verdict was an HTTP 500 tried five times, and none was read."""
    before = len(llama_server.requests())
    evaluate_flow(EvaluateParams(benchmark="xs", models=["sys"], judges=["served-chat"], home=str(served_home)))
    during = llama_server.requests()[before:]
    with Warehouse(served_home) as wh:
        verdicts = dict(wh.query("SELECT status, count(*) FROM judgements WHERE benchmark = 'xs' GROUP BY ALL"))
        failed = wh.scalar("SELECT sum(judge_failed) FROM leaderboard WHERE benchmark = 'xs' AND model = 'sys'"
                           " AND metric = 'accuracy' AND lang = 'all' AND subset = 'all'")
        calls = wh.query("SELECT status, attempts, count(*) FROM llm_calls WHERE stage = 'judging' GROUP BY ALL")
    assert verdicts == {"ok": 18} and failed == 0
    assert calls == [("ok", 1, 18)]  # each verdict asked once: nothing refused, nothing retried
    # the server's side: the check learned the chat API's mode (one probe refused, in the learning), then every
    # judge call was answered
    refused = [(method, path) for method, path, status in during if status == 500]
    assert refused == [("POST", "/v1/chat/completions")]
    assert sum(status == 200 and path == "/v1/chat/completions" for _, path, status in during) >= 18


def test_the_server_answers_and_judges_a_whole_xrag_evaluation(served_home: Path) -> None:
    evaluate_flow(EvaluateParams(benchmark="x2", models=["served"], judges=["served-chat"],
                                 inference=InferenceConfig(max_tokens=24), home=str(served_home)))
    with Warehouse(served_home) as wh:
        responses = wh.query("SELECT status, count(*) FROM responses WHERE benchmark = 'x2' GROUP BY ALL")
        verdicts = dict(wh.query("SELECT status, count(*) FROM judgements WHERE benchmark = 'x2' GROUP BY ALL"))
        failed = wh.scalar("SELECT sum(judge_failed) FROM leaderboard WHERE benchmark = 'x2' AND metric = 'accuracy'"
                           " AND lang = 'all' AND subset = 'all'")
    assert responses == [("ok", 2)]  # the completion model answered both
    assert verdicts == {"ok": 2} and failed == 0


def test_the_eclektic_support_judge_reads_every_verdict(home: Path, llama_server: LlamaServer, tmp_path: Path) -> None:
    _registry(home, _entry("served-chat", llama_server, "chat"))
    facts = [("Velna", "Die Velna-Brücke wurde 1871 eröffnet.", "Wann wurde die Velna-Brücke eröffnet?", "1871"),
             ("Tarsk", "Den Dom von Tarsk entwarf Maren Tolk.", "Wer entwarf den Dom von Tarsk?", "Maren Tolk")]
    lines = [{"q_id": f"q{n}", "original_lang": "de", "title": title, "url": "https://de.wikipedia.org/x",
              "content": context, "question": question, "answer": answer, "de_q": question, "de_a": answer,
              "de_c": context} for n, (title, context, question, answer) in enumerate(facts)]
    (tmp_path / "ecl.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    with Warehouse(home) as wh:
        import_dataset(wh, "eclektic", tmp_path / "ecl.jsonl", "ecl", None)
        ids = [row[0] for row in wh.query("SELECT instance_id FROM instances WHERE benchmark = 'ecl' ORDER BY 1")]
        (tmp_path / "sys.jsonl").write_text("".join(json.dumps({"instance_id": i, "text": text}) + "\n" for i, text
                                                    in zip(ids, ["1871", "Karl Lenz"], strict=True)))
        import_responses(wh, "ecl", "sys", tmp_path / "sys.jsonl", ["served-chat"])
    evaluate_flow(EvaluateParams(benchmark="ecl", models=["sys"], judges=["served-chat"], home=str(home)))
    with Warehouse(home) as wh:
        verdicts = wh.query("SELECT status, verdict IS NOT NULL FROM judgements WHERE benchmark = 'ecl'")
    assert verdicts == [("ok", True), ("ok", True)]


def test_a_pairwise_arena_judge_reads_every_battle(served_home: Path) -> None:
    evaluate_flow(EvaluateParams(benchmark="x2", models=["oracle", "abstain"], judges=[], home=str(served_home)))
    arena_flow(ArenaParams(benchmark="x2", models=["oracle", "abstain"], judge="served-chat", bootstrap=20,
                           arena=ArenaConfig(queries_per_lang=1, max_tokens=96, doc_chars=300), home=str(served_home)))
    with Warehouse(served_home) as wh:
        statuses = dict(wh.query("SELECT status, count(*) FROM battles WHERE benchmark = 'x2' GROUP BY ALL"))
    assert statuses == {"ok": 2 * 2}  # the question in each of 2 languages, the pair in both orders


def test_the_qa_prescreen_reads_every_check(served_home: Path) -> None:
    with Warehouse(served_home) as wh:
        prescreen(wh, LLMClient(wh, load_registry(home=served_home)), "x2", "served-chat", QcConfig(), "fp")
        checks = wh.query("SELECT verdict, count(*) FROM qa_reviews WHERE benchmark = 'x2' AND reviewer LIKE 'llm:%'"
                          " GROUP BY ALL")
        items = wh.scalar("SELECT count(*) FROM qa_items WHERE benchmark = 'x2' AND status = 'ok'")
    # three checks per item, each a pass or a fail the screen read (never "unsure": a reply it could not read)
    assert sum(count for _, count in checks) == 3 * items and {verdict for verdict, _ in checks} <= {"pass", "fail"}


def _mkqa_home(home: Path, server: LlamaServer) -> None:
    _registry(home, _entry("served", server, "completion", max_concurrency=1))
    with Warehouse(home) as wh:
        import_dataset(wh, "mkqa", MKQA_SAMPLE, "mk", ["en"])


def test_a_server_killed_mid_run_fails_the_rest_honestly_and_the_rerun_pays_nothing_twice(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_server()
    with LlamaServer(tmp_path / "server.log", alias=ALIAS) as server:
        _mkqa_home(home, server)
        assert _cli(home, "models", "check", "served").exit_code == 0
        checked = len(server.requests())

        def kill_after_three_answers() -> None:
            while sum(path == "/v1/completions" for _, path, _ in server.requests()[checked:]) < 3:
                time.sleep(0.05)
            server.kill()

        killer = threading.Thread(target=kill_after_three_answers, daemon=True)
        killer.start()
        params = EvaluateParams(benchmark="mk", models=["served"], inference=InferenceConfig(max_tokens=24),
                                home=str(home))
        evaluate_flow(params)
        killer.join(timeout=60)
        with Warehouse(home) as wh:
            first = dict(wh.query("SELECT instance_id, status || ':' || coalesce(reason, '') FROM responses"
                                  " WHERE benchmark = 'mk'"))
        answered = {i for i, state in first.items() if state.startswith("ok")}
        failed = {i for i, state in first.items() if state.startswith("call_failed")}
        assert answered and failed and answered | failed == set(first)
        # honest failures: each says the endpoint went away, none is a made-up answer
        assert all("connection" in first[i] or "unreachable" in first[i] for i in failed), first

        server.start()
        restarted = len(server.requests())
        # the rerun of a new process, or of a long-lived worker once its breaker's probe is due (made due now)
        monkeypatch.setattr(client_module, "REPROBE_AFTER_S", 0.0)
        evaluate_flow(params)
        after = server.requests()[restarted:]
        with Warehouse(home) as wh:
            second = dict(wh.query("SELECT instance_id, status FROM responses WHERE benchmark = 'mk'"))
    assert set(second.values()) == {"ok"}
    # only the failed ones were asked again: the answered ones came from the call cache
    assert sum(path == "/v1/completions" for _, path, _ in after) == len(failed)


def test_a_server_restarted_with_another_model_under_the_same_name_stops_the_run_until_accepted(
        home: Path, tmp_path: Path) -> None:
    require_server()
    with LlamaServer(tmp_path / "server.log", alias=ALIAS) as server:
        _mkqa_home(home, server)
        assert _cli(home, "models", "check", "served").exit_code == 0
        server.kill()
        server.start(gguf=altered_gguf(tmp_path / "other.gguf"))
        restarted = len(server.requests())

        check = _cli(home, "models", "check", "served")
        assert check.exit_code == 1
        assert (f"another model now answers at {server.base_url} under {ALIAS!r}: its answer to the fixed test prompt"
                " at temperature 0 was") in check.output

        evaluate_flow(EvaluateParams(benchmark="mk", models=["served"], home=str(home)))
        with Warehouse(home) as wh:
            reasons = wh.query("SELECT DISTINCT status, reason FROM responses WHERE benchmark = 'mk'")
            assert wh.scalar("SELECT count(*) FROM llm_calls") == 0  # nothing was asked of the other model
        [(status, reason)] = reasons  # every question a failed row, saying why
        assert status == "call_failed"
        assert "model 'served' failed its check, so none of its calls were made: another model now answers" in reason
        # the checks' timed calls only: one per check (the CLI's and the run's)
        assert sum(path == "/v1/completions" for _, path, _ in server.requests()[restarted:]) == 2

        accepted = _cli(home, "models", "check", "served", "--relearn")
        assert accepted.exit_code == 0 and "learned now" in accepted.output
