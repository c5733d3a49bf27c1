"""``models check`` on the faults a real server cannot be made to show here — a dead port, a server that refuses every
structured-output field — and the refusals told apart from outages: a validation error in a 500 is not retried, the
field it names is said, and identical refusals stop a model's calls.  The real server's side is
tests/models/test_model_servers.py; the fake endpoint (tests/support/fake_llm_server.py) stands in only for faults.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from tasks.llm import LLMClient, LLMRequest, ModelSpec, Registry
from tasks.llm.endpoints import EndpointMemory
from tasks.llm.server_errors import named_field, refusal
from tasks.retry import RetryPolicy
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, Fault, NoSleep

POLICY = RetryPolicy(attempts=5, initial_delay=0.01, max_delay=1.0, jitter=0.0)
#: llama-cpp-python's answer to a response_format it does not take, as it sends it (HTTP 500, FastAPI's error shape)
LLAMA_CPP_PYTHON_500 = {"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body',"
                                  " 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\","
                                  " 'input': 'json_schema'}\n\n  File \"app.py\", line 376, in create_chat_completion",
                                  "type": "internal_server_error", "param": None, "code": None}}


def _cli(home: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--home", str(home), *args])


def _registry(home: Path, **entry: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    fields = {"name": "served", "backend": "openai", "model": "m-1", "mode": "chat", "timeout": 10.0} | entry
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [fields]}), encoding="utf-8")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with Warehouse(tmp_path / "home") as warehouse:
        yield warehouse


def _client(wh: Warehouse, server: FakeLLMServer, **entry: Any) -> LLMClient:
    fields = {"name": "fake", "backend": "openai", "model": "m-1", "base_url": server.base_url, "mode": "chat",
              "max_concurrency": 1, "timeout": 10.0} | entry
    return LLMClient(wh, Registry(models=(ModelSpec(**fields),), source="test"), policy=POLICY, sleep=NoSleep())


def _asks(*names: str) -> list[LLMRequest]:
    return [LLMRequest(prompt=f"question {name}", max_tokens=8) for name in names]


def test_check_of_a_dead_port_says_nothing_answers_and_exits_1(home: Path) -> None:
    _registry(home, base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    result = _cli(home, "models", "check", "served")
    assert result.exit_code == 1
    lines = dict(line.split(None, 1) for line in result.output.splitlines() if line.strip())
    assert lines["reachable"] == "no"
    assert lines["verdict"].startswith("NOT usable: nothing answers at http://127.0.0.1:")
    found = json.loads(_cli(home, "models", "check", "served", "--json").output)
    assert (found["reachable"], found["usable"], found["structured"]) == (False, False, None)


def test_check_of_a_server_refusing_every_structured_field_finds_none_and_says_why_for_each(home: Path) -> None:
    with FakeLLMServer(models=["m-1"], structured=(), refusal=(422, {"detail": [
            {"type": "extra_forbidden", "loc": ["body", "response_format"], "msg": "Extra inputs are not permitted"}]})
            ) as server:
        _registry(home, base_url=server.base_url)
        result = _cli(home, "models", "check", "served", "--json")
        calls = server.calls
    found = json.loads(result.output)
    assert result.exit_code == 0 and found["usable"] is True  # usable: the strict reader reads plain replies
    assert found["structured"] == "none"
    why = found["refused"]
    refused = "refused: HTTP 422: field response_format refused: body.response_format: Extra inputs are not permitted"
    assert why == {"json_schema": refused, "json_object_schema": refused, "json_object": refused,
                   "grammar": why["grammar"]}
    assert why["grammar"].startswith("accepted, but the reply did not follow the schema")  # it ignores the field
    assert any("strict reader alone" in warning for warning in found["warnings"])
    assert calls == []  # the check's requests are its own
    assert EndpointMemory(home).records()[f"{server.base_url} m-1 chat"].structured == "none"


def test_check_of_a_wrong_model_id_names_the_served_ones(home: Path) -> None:
    with FakeLLMServer(models=["qwen2.5-7b", "llama3:latest"]) as server:
        _registry(home, base_url=server.base_url, model="gpt-4o")
        wrong = _cli(home, "models", "check", "served")
        _registry(home, base_url=server.base_url, model="llama3")  # Ollama's tag: llama3 is llama3:latest
        right = _cli(home, "models", "check", "served")
    assert wrong.exit_code == 1
    assert ("NOT usable: the server does not serve model 'gpt-4o' (it lists: qwen2.5-7b, llama3:latest); set the"
            " entry's model to one of those (babelbench models edit served --model ID)") in wrong.output
    assert right.exit_code == 0, right.output


@pytest.mark.parametrize(("status", "body", "field"), [
    (500, LLAMA_CPP_PYTHON_500, "response_format.type"),  # llama-cpp-python
    (422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text'"}]},
     "response_format.type"),  # FastAPI
    (400, {"error": {"message": "Invalid value", "type": "invalid_request_error", "param": "response_format"}},
     "response_format"),  # OpenAI
    (400, {"object": "error", "message": "'json_schema' is not supported by this model", "code": 400}, "json_schema"),
    (404, {"error": {"message": "model 'x' not found", "type": "api_error"}}, "model"),  # Ollama
])
def test_refusals_are_read_with_the_field_they_name(status: int, body: dict[str, Any], field: str) -> None:
    error = body.get("error", body)  # the SDK hands over the error object
    found = refusal(status, error, json.dumps(body))
    assert found is not None and found.field == field and found.status == status
    assert "\n" not in found.words and "File " not in found.words  # one line, the traceback dropped


@pytest.mark.parametrize(("status", "words"), [(500, "Internal Server Error"), (503, "overloaded"), (429, "slow down"),
                                                (502, "Bad Gateway"), (504, "upstream timed out")])
def test_outages_are_not_refusals(status: int, words: str) -> None:
    assert refusal(status, {"message": words}, words) is None


def test_named_field_takes_openai_param_first() -> None:
    assert named_field({"param": "temperature", "message": "response_format is fine"}, "") == "temperature"


def test_a_500_holding_a_validation_error_is_refused_once_and_not_retried(wh: Warehouse) -> None:
    with FakeLLMServer() as server:
        server.script("question alpha", Fault.with_status(500, LLAMA_CPP_PYTHON_500["error"]["message"]))
        server.script("question bravo", Fault.with_status(500, "Internal Server Error"))
        alpha, bravo = _client(wh, server, mode="completion").run_sync("fake", _asks("alpha", "bravo"), stage="t")
        asked = {name: len(server.calls_about(f"question {name}")) for name in ("alpha", "bravo")}
    assert alpha.status == "failed" and alpha.attempts == 1  # before: five attempts with backoff
    assert "HTTP 500: field response_format.type refused: 1 validation error:" in (alpha.error or "")
    assert bravo.status == "ok" and bravo.attempts == 2  # a bare 500 is an outage: retried
    assert asked == {"alpha": 1, "bravo": 2}


def test_identical_refusals_stop_the_model_after_three_and_the_rest_are_not_sent(wh: Warehouse) -> None:
    with FakeLLMServer() as server:
        for name in "abcdefgh":
            server.script(f"question {name}", Fault.with_status(400, "The model `m-1` does not exist."))
        results = _client(wh, server, mode="completion").run_sync("fake", _asks(*"abcdefgh"), stage="t")
        sent = len(server.calls)
    assert [r.attempts for r in results] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert sent == 3
    assert all((r.error or "").startswith("permanent: model 'fake': HTTP 400: field model refused") for r in results[:3])
    assert all((r.error or "").startswith("not sent: the server refused model 'fake''s last 3 requests the same way")
               for r in results[3:])


def test_refusals_that_differ_never_open_the_breaker(wh: Warehouse) -> None:
    with FakeLLMServer() as server:
        for n in range(5):
            server.script(f"question long{n}", Fault.with_status(400, f"prompt too long: {3000 + n} > 2048 tokens"))
        results = _client(wh, server, mode="completion").run_sync("fake", _asks(*(f"long{n}" for n in range(5))),
                                                                   stage="t")
    assert [r.attempts for r in results] == [1] * 5  # each refused for its own length, each sent


def test_a_model_is_checked_once_per_process_and_home_however_many_batches(wh: Warehouse) -> None:
    with FakeLLMServer(models=["m-1"]) as server:
        client = _client(wh, server)
        for name in ("one", "two", "three"):
            client.run_sync("fake", [LLMRequest(messages=({"role": "user", "content": name},))], stage="t")
        listings = [call for call in server.checks if call.path == "/v1/models"]
    assert len(listings) == 1
