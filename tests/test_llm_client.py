"""The call discipline against a loopback OpenAI-compatible server: retries, failures, cache, budgets, concurrency.

Everything goes through the official openai SDK over HTTP to
``tests/fake_llm_server.py``; retries wait through an injected sleep that
records what was asked and returns at once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.dumps.download import RetryPolicy
from tasks.errors import ConfigError
from tasks.llm import Budget, LLMClient, LLMRequest, ModelSpec, Registry, load_registry
from tasks.llm.registry import MODELS_ENV
from tasks.warehouse.db import Warehouse
from tests.fake_llm_server import FakeLLMServer, Fault

POLICY = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=30.0, jitter=0.0)


class SleepRecorder:
    """Stands in for asyncio.sleep: remembers each requested wait, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with Warehouse(tmp_path / "home") as warehouse:
        yield warehouse


def _registry(server: FakeLLMServer, **overrides: object) -> Registry:
    fields = {"name": "fake", "backend": "openai", "model": "fake-model", "base_url": server.base_url,
              "mode": "completion", "max_concurrency": 4, "timeout": 10.0} | overrides
    return Registry(models=(ModelSpec.model_validate(fields),), source="test")


def _prompts(*names: str, max_tokens: int = 8) -> list[LLMRequest]:
    return [LLMRequest(prompt=f"question {name}", max_tokens=max_tokens) for name in names]


def _row(wh: Warehouse, key: str) -> dict:
    return wh.query_dicts("SELECT * FROM llm_calls WHERE request_hash = ?", [key])[0]


def test_429_waits_at_least_retry_after_then_succeeds(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("alpha", Fault.with_status(429, "slow down", retry_after=7))
    sleep = SleepRecorder()
    [result] = LLMClient(wh, _registry(server), policy=POLICY, sleep=sleep).run_sync("fake", _prompts("alpha"), stage="t")
    assert result.status == "ok" and result.attempts == 2
    assert result.response is not None and result.response.text == "echo: question alpha"
    assert sleep.waits == [7.0]  # the server's hint, not the 0.01 s backoff
    assert len(server.calls_about("alpha")) == 2


def test_500_then_ok_is_retried_with_backoff(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("bravo", Fault.with_status(500), Fault.with_status(503))
    sleep = SleepRecorder()
    [result] = LLMClient(wh, _registry(server), policy=POLICY, sleep=sleep).run_sync("fake", _prompts("bravo"), stage="t")
    assert result.status == "ok" and result.attempts == 3
    assert sleep.waits == [pytest.approx(0.01), pytest.approx(0.02)]  # initial_delay doubling, no jitter
    assert _row(wh, result.request_hash)["attempts"] == 3


def test_a_timeout_is_retried(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("charlie", Fault.hang(10))
    [result] = LLMClient(wh, _registry(server, timeout=1.0), policy=POLICY, sleep=SleepRecorder()).run_sync(
        "fake", _prompts("charlie"), stage="t")
    assert result.status == "ok" and result.attempts == 2
    assert len(server.calls_about("charlie")) == 2


def test_an_unreachable_endpoint_fails_each_item_after_its_retries(wh: Warehouse) -> None:
    with FakeLLMServer() as gone:
        registry = _registry(gone)
    sleep = SleepRecorder()
    results = LLMClient(wh, registry, policy=POLICY, sleep=sleep).run_sync("fake", _prompts("sierra", "tango"), stage="t")
    assert [r.status for r in results] == ["failed", "failed"]
    assert all("transient, gave up after 3 attempts" in (r.error or "") and "connection failed" in (r.error or "") for r in results)
    assert len(sleep.waits) == 2 * (POLICY.attempts - 1)


def test_permanent_error_fails_its_item_only_and_is_not_retried(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("delta", Fault.with_status(400, "context length exceeded"))
    sleep = SleepRecorder()
    results = LLMClient(wh, _registry(server), policy=POLICY, sleep=sleep).run_sync(
        "fake", _prompts("one", "delta", "two"), stage="judge")
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    failed = results[1]
    assert failed.error is not None and failed.error.startswith("permanent:")
    assert "HTTP 400" in failed.error and "context length exceeded" in failed.error
    assert len(server.calls_about("delta")) == 1 and sleep.waits == []
    row = _row(wh, failed.request_hash)
    assert (row["status"], row["error"], row["stage"], row["response_text"]) == ("failed", failed.error, "judge", None)


def test_persistent_malformed_body_is_recorded_after_the_retries(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("echo", Fault.malformed(), Fault.malformed(), Fault.malformed())
    server.script("foxtrot", Fault.garbage())  # once: a truncated body, then a good one
    results = LLMClient(wh, _registry(server), policy=POLICY, sleep=SleepRecorder()).run_sync(
        "fake", _prompts("echo", "foxtrot"), stage="t")
    assert [r.status for r in results] == ["failed", "ok"]
    assert results[0].attempts == POLICY.attempts and "malformed response" in (results[0].error or "")
    assert "no choices" in _row(wh, results[0].request_hash)["error"]
    assert results[1].attempts == 2


def test_rerun_is_served_from_the_warehouse_without_calls(server: FakeLLMServer, wh: Warehouse) -> None:
    registry = _registry(server, price_in=2.0, price_out=4.0)
    requests = _prompts("golf", "hotel", "india")
    first = LLMClient(wh, registry, policy=POLICY).run_sync("fake", requests, stage="t")
    assert [r.status for r in first] == ["ok"] * 3
    # the fake counts words: "question golf" is 2 tokens in, "echo: question golf" 3 out
    assert first[0].response is not None and (first[0].response.input_tokens, first[0].response.output_tokens) == (2, 3)
    assert first[0].cost_usd == pytest.approx((2 * 2.0 + 3 * 4.0) / 1_000_000)
    assert _row(wh, first[0].request_hash)["cost_usd"] == pytest.approx(first[0].cost_usd)
    calls = len(server.calls)

    second = LLMClient(wh, registry, policy=POLICY).run_sync("fake", requests, stage="t")
    assert len(server.calls) == calls
    assert [r.status for r in second] == ["cached"] * 3
    assert [r.response.text for r in second if r.response] == ["echo: question golf", "echo: question hotel", "echo: question india"]
    assert LLMClient(wh, registry).estimate_cost("fake", requests) == (0, 0.0)


def test_failed_items_are_called_again_on_a_rerun(server: FakeLLMServer, wh: Warehouse) -> None:
    server.script("juliet", Fault.with_status(401, "bad key"))
    client = LLMClient(wh, _registry(server), policy=POLICY, sleep=SleepRecorder())
    assert [r.status for r in client.run_sync("fake", _prompts("juliet", "kilo"), stage="t")] == ["failed", "ok"]
    calls = len(server.calls)
    rerun = client.run_sync("fake", _prompts("juliet", "kilo"), stage="t")
    assert [r.status for r in rerun] == ["ok", "cached"]
    assert len(server.calls) == calls + 1
    assert _row(wh, rerun[0].request_hash)["status"] == "ok"


def test_budget_stops_the_stage_and_a_rerun_resumes(server: FakeLLMServer, wh: Warehouse) -> None:
    requests = _prompts("l1", "l2", "l3", "l4", "l5")
    client = LLMClient(wh, _registry(server, max_concurrency=1), policy=POLICY)
    first = client.run_sync("fake", requests, stage="t", budget=Budget(max_calls=2))
    assert [r.status for r in first] == ["ok", "ok", "skipped_budget", "skipped_budget", "skipped_budget"]
    assert len(server.calls) == 2
    assert wh.scalar("SELECT count(*) FROM llm_calls") == 2

    second = client.run_sync("fake", requests, stage="t", budget=Budget(max_calls=3))
    assert [r.status for r in second] == ["cached", "cached", "ok", "ok", "ok"]
    assert len(server.calls) == 5


def test_token_budget_counts_reported_usage_and_reserves_estimates(server: FakeLLMServer, wh: Warehouse) -> None:
    # estimate per call: ceil(len("question mN") / 4) = 3 in + 4 max out = 7; reported usage: 2 in + 3 out = 5.
    # Limit 17: call 1 (0 + 7), call 2 (5 + 7), call 3 needs 10 + 7 = 17 (fits), call 4 needs 15 + 7 = 22 (stops).
    requests = _prompts("m1", "m2", "m3", "m4", "m5", max_tokens=4)
    client = LLMClient(wh, _registry(server, max_concurrency=1), policy=POLICY)
    results = client.run_sync("fake", requests, stage="t", budget=Budget(max_tokens=17))
    assert [r.status for r in results] == ["ok", "ok", "ok", "skipped_budget", "skipped_budget"]


def test_concurrency_never_exceeds_the_model_limit(wh: Warehouse) -> None:
    with FakeLLMServer(delay=0.1, lifetime=30) as slow:
        results = LLMClient(wh, _registry(slow, max_concurrency=3), policy=POLICY).run_sync(
            "fake", _prompts(*(f"n{i}" for i in range(9))), stage="t")
        assert [r.status for r in results] == ["ok"] * 9
        assert slow.max_in_flight == 3  # reached, and never more


def test_identical_requests_share_one_call(server: FakeLLMServer, wh: Warehouse) -> None:
    results = LLMClient(wh, _registry(server), policy=POLICY).run_sync("fake", _prompts("oscar", "oscar"), stage="t")
    assert [r.status for r in results] == ["ok", "ok"]
    assert results[0].request_hash == results[1].request_hash
    assert len(server.calls) == 1


def test_cache_key_covers_parameters_but_not_the_registry_name(server: FakeLLMServer, wh: Warehouse) -> None:
    LLMClient(wh, _registry(server), policy=POLICY).run_sync("fake", _prompts("papa"), stage="t")
    renamed = _registry(server, name="same-model-elsewhere")
    again = LLMClient(wh, renamed, policy=POLICY).run_sync("same-model-elsewhere", _prompts("papa"), stage="t")
    assert again[0].status == "cached"
    seeded = [LLMRequest(prompt="question papa", max_tokens=8, seed=1)]
    assert LLMClient(wh, renamed, policy=POLICY).run_sync("same-model-elsewhere", seeded, stage="t")[0].status == "ok"
    assert len(server.calls) == 2


def test_a_request_of_the_wrong_mode_stops_before_any_call(server: FakeLLMServer, wh: Warehouse) -> None:
    chat = LLMRequest(messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ConfigError, match="request 1: model 'fake' is a completion model"):
        LLMClient(wh, _registry(server), policy=POLICY).run_sync("fake", [*_prompts("quebec"), chat], stage="t")
    assert server.calls == []


def test_any_openai_compatible_endpoint_is_a_registry_entry(
    server: FakeLLMServer, wh: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry_file = tmp_path / "models.yaml"
    registry_file.write_text(
        "models:\n"
        "  - name: my-endpoint\n"
        "    backend: openai\n"
        "    model: some/chat-model\n"
        f"    base_url: {server.base_url}\n"
        "    api_key_env: FAKE_ENDPOINT_KEY\n"
        "    mode: chat\n",
        encoding="utf-8",
    )
    monkeypatch.setenv(MODELS_ENV, str(registry_file))
    monkeypatch.setenv("FAKE_ENDPOINT_KEY", "sk-test-123")
    request = LLMRequest(messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of Peru?"}])
    [result] = LLMClient(wh, load_registry(), policy=POLICY).run_sync("my-endpoint", [request], stage="t")
    assert result.status == "ok" and result.response is not None
    assert result.response.text == "echo: Be brief.\nCapital of Peru?"
    [call] = server.calls
    assert call.path == "/v1/chat/completions"
    assert call.body["model"] == "some/chat-model" and call.body["temperature"] == 0
    assert call.headers["authorization"] == "Bearer sk-test-123"


def test_a_missing_api_key_variable_is_a_config_error(server: FakeLLMServer, wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    client = LLMClient(wh, _registry(server, api_key_env="NOT_SET_KEY"), policy=POLICY)
    with pytest.raises(ConfigError, match="NOT_SET_KEY .* is not set"):
        client.run_sync("fake", _prompts("romeo"), stage="t")


def test_the_anthropic_backend_says_how_to_install_its_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.llm.backends import create_backend

    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if not installed: importing it raises ImportError
    spec = ModelSpec(name="claude", backend="anthropic", model="claude-x", mode="chat")
    with pytest.raises(ConfigError, match="pip install anthropic"):
        create_backend(spec)
