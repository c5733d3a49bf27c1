"""The Anthropic backend through the official ``anthropic`` SDK, over HTTP, against the loopback server's Messages
API (``tests/support/fake_llm_server.py``): what it sends, what it reads back, and the same call discipline as an
OpenAI-compatible endpoint under faults — a 429 waited out as asked, an overloaded 529 retried, a refusal failing
its item only, a body that is not a message, and a key that an error echoes never stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.llm import LLMClient, LLMRequest, ModelSpec, Registry
from tasks.llm.types import ResponseFormat
from tasks.retry import RetryPolicy
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import MESSAGES, FakeLLMServer, Fault, SleepRecorder

POLICY = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=30.0, jitter=0.0)
KEY = "sk-ant-test-0123456789"


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with Warehouse(tmp_path / "home") as warehouse:
        yield warehouse


@pytest.fixture
def client(server: FakeLLMServer, wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> tuple[LLMClient, SleepRecorder]:
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    spec = ModelSpec(name="claude", backend="anthropic", model="claude-test", base_url=server.root_url,
                     api_key_env="FAKE_ANTHROPIC_KEY", mode="chat", max_concurrency=2, timeout=5.0)
    sleep = SleepRecorder()
    return LLMClient(wh, Registry(models=(spec,), source="test"), policy=POLICY, sleep=sleep), sleep


def _ask(text: str, **fields: object) -> LLMRequest:
    return LLMRequest(messages=[{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": text}],
                      max_tokens=16, **fields)


def test_a_chat_call_sends_the_system_text_apart_and_reads_the_reply_and_its_usage(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder]) -> None:
    server.answer("Capital of Peru", "Lima")
    [result] = client[0].run_sync("claude", [_ask("Capital of Peru?", stop=["\n\n"])], stage="t")
    assert result.status == "ok" and result.response is not None
    assert result.response.text == "Lima"
    [call] = server.calls_about("Capital of Peru")
    assert call.path == MESSAGES and call.headers["authorization"] == f"Bearer {KEY}"
    assert call.body["model"] == "claude-test" and call.body["max_tokens"] == 16
    assert call.body["system"] == "Answer in one word."
    assert call.body["messages"] == [{"role": "user", "content": "Capital of Peru?"}]
    assert call.body["stop_sequences"] == ["\n\n"]
    # the server counts words: "Answer in one word." and "Capital of Peru?" are 4 + 3, its reply one
    assert (result.response.input_tokens, result.response.output_tokens) == (7, 1)
    assert result.response.finish_reason == "end_turn"


def test_a_reply_in_a_format_is_asked_for_as_one_forced_tool_and_its_input_is_the_reply(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder]) -> None:
    schema = {"type": "object", "properties": {"verdict": {"enum": ["A", "B", "tie"]}, "why": {"type": "string"}},
              "required": ["verdict", "why"]}
    server.answer("Which answer", json.dumps({"verdict": "B", "why": "it cites the source"}))
    request = _ask("Which answer is better?", response_format=ResponseFormat.of("verdict", schema))
    [result] = client[0].run_sync("claude", [request], stage="judge")
    assert result.status == "ok" and result.response is not None
    assert json.loads(result.response.text) == {"verdict": "B", "why": "it cites the source"}
    [call] = server.calls_about("Which answer")
    assert call.body["tools"] == [{"name": "verdict", "description": "Record your verdict.", "input_schema": schema}]
    assert call.body["tool_choice"] == {"type": "tool", "name": "verdict"}


def test_429_is_waited_out_as_the_server_asks_and_529_retried_with_backoff(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder]) -> None:
    server.script("alpha", Fault.with_status(429, "rate limited", retry_after=6))
    server.script("bravo", Fault.with_status(529, "overloaded"))
    results = client[0].run_sync("claude", [_ask("alpha"), _ask("bravo")], stage="t")
    assert [(r.status, r.attempts) for r in results] == [("ok", 2), ("ok", 2)]
    assert sorted(client[1].waits) == [pytest.approx(0.01), 6.0]  # bravo's first backoff; alpha's Retry-After
    assert len(server.calls_about("alpha")) == len(server.calls_about("bravo")) == 2


def test_a_refusal_fails_its_item_only_without_a_retry(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder]) -> None:
    server.script("delta", Fault.with_status(400, "prompt is too long: 250000 tokens > 200000 maximum"))
    results = client[0].run_sync("claude", [_ask("charlie"), _ask("delta")], stage="t")
    assert [r.status for r in results] == ["ok", "failed"]
    error = results[1].error or ""
    assert error.startswith("permanent:") and "HTTP 400" in error and "prompt is too long" in error
    assert len(server.calls_about("delta")) == 1 and client[1].waits == []


def test_a_body_that_is_not_a_message_is_retried_then_recorded_as_malformed(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder]) -> None:
    server.script("echo", Fault.malformed(), Fault.malformed(), Fault.malformed())
    server.script("foxtrot", Fault.garbage())  # once: a truncated body, then a good one
    results = client[0].run_sync("claude", [_ask("echo"), _ask("foxtrot")], stage="t")
    assert [r.status for r in results] == ["failed", "ok"]
    assert results[0].attempts == POLICY.attempts and "malformed response" in (results[0].error or "")
    assert results[1].attempts == 2


def test_a_key_echoed_by_an_error_is_never_stored(
        server: FakeLLMServer, client: tuple[LLMClient, SleepRecorder], wh: Warehouse) -> None:
    server.script("golf", Fault.echo_authorization(401))
    [result] = client[0].run_sync("claude", [_ask("golf")], stage="t")
    assert result.status == "failed" and KEY not in (result.error or "")
    stored = wh.query_dicts("SELECT error FROM llm_calls WHERE request_hash = ?", [result.request_hash])
    assert stored and KEY not in str(stored) and "[redacted]" in stored[0]["error"]
