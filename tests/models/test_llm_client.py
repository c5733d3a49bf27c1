"""The call discipline against a loopback OpenAI-compatible server: retries, failures, cache, budgets, concurrency.

Everything goes through the official openai SDK over HTTP to
``tests/support/fake_llm_server.py``; retries wait through an injected sleep that
records what was asked and returns at once.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.llm import Budget, BudgetLedger, CallResult, LLMClient, LLMRequest, ModelSpec, Registry, load_registry
from tasks.llm import client as client_module
from tasks.llm.registry import MODELS_ENV
from tasks.retry import RetryPolicy
from tasks.warehouse.db import Warehouse
from tests.support import fake_llm_server
from tests.support.fake_llm_server import FakeLLMServer, Fault, SleepRecorder

POLICY = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=30.0, jitter=0.0)


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


def _closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _refusing(name: str, port: int, **overrides: object) -> Registry:
    """A registry whose model ``name`` is served at ``port``: named per test, as the breaker is the model's for the
    whole process (a spec differing in any field is another model)."""
    fields = {"name": name, "backend": "openai", "model": "fake-model", "base_url": f"http://127.0.0.1:{port}/v1",
              "mode": "completion", "max_concurrency": 1, "timeout": 10.0} | overrides
    return Registry(models=(ModelSpec.model_validate(fields),), source="test")


@contextmanager
def _served_on(port: int) -> Iterator[FakeLLMServer]:
    """A fake server bound to ``port``, so that a model registered there before is served, then gone again."""

    class OnThePort(fake_llm_server.QuietServer):
        def server_bind(self) -> None:
            self.server_address = ("127.0.0.1", port)
            super().server_bind()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fake_llm_server, "QuietServer", OnThePort)
        with FakeLLMServer() as server:
            yield server


def _gone_after_its_check(wh: Warehouse, name: str, *, policy: RetryPolicy = POLICY,
                          sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                          **overrides: object) -> tuple[LLMClient, int]:
    """A client whose model ``name`` passed its check and answered, after which its server went away: a server that
    dies in the middle of a run (a model that is down from the start never gets a call: see the next tests)."""
    port = _closed_port()
    client = LLMClient(wh, _refusing(name, port, **overrides), policy=policy, sleep=sleep)
    with _served_on(port):
        assert [r.status for r in client.run_sync(name, _prompts("warm-up"), stage="t")] == ["ok"]
    return client, port


def test_a_model_down_from_the_start_fails_its_check_and_no_call_is_made(wh: Warehouse) -> None:
    sleep = SleepRecorder()
    client = LLMClient(wh, _refusing("down-at-start", _closed_port()), policy=POLICY, sleep=sleep)
    results = client.run_sync("down-at-start", _prompts("sierra", "tango"), stage="t")
    # each request a failed result with the check's reason, none sent, nothing waited for, nothing stored
    assert [(r.status, r.attempts) for r in results] == [("failed", 0)] * 2
    assert all(re.fullmatch(r"model 'down-at-start' failed its check, so none of its calls were made: nothing answers"
                            r" at http://127\.0\.0\.1:\d+/v1/ \(.*\); is the server running\? \(babelbench models"
                            r" check down-at-start shows the whole check\)", r.error or "") for r in results), results
    assert sleep.waits == [] and wh.query("SELECT count(*) FROM llm_calls") == [(0,)]


def test_a_refusing_endpoint_opens_the_breaker_and_the_models_other_requests_fail_at_once(wh: Warehouse) -> None:
    sleep = SleepRecorder()
    client, _ = _gone_after_its_check(wh, "down-once", sleep=sleep)
    results = client.run_sync("down-once", _prompts("sierra", "tango", "uniform", "victor", "whiskey"), stage="t")
    assert [r.status for r in results] == ["failed"] * 5
    assert all((r.error or "").startswith("endpoint unreachable: model 'down-once' refused 3 connections in a row")
               for r in results)
    assert "connection failed" in (results[0].error or "")  # the last refusal, as the backend reported it
    # one request at a time: the first one's three attempts (refused, wait 0.01, refused, wait 0.02, refused) open
    # the breaker; the four others are never sent.  Before the breaker: 5 x 3 = 15 attempts and 5 x 2 = 10 waits.
    assert [r.attempts for r in results] == [3, 0, 0, 0, 0]
    assert sleep.waits == [pytest.approx(0.01), pytest.approx(0.02)]
    # the attempt made is recorded (failed, so never served); requests never sent leave no row
    assert wh.query("SELECT status, attempts FROM llm_calls WHERE status = 'failed'") == [("failed", 3)]


def test_a_refusing_endpoint_stops_a_batch_within_seconds_under_the_default_policy(wh: Warehouse) -> None:
    # the default policy waits 1 + 2 + 4 + 8 s (plus up to 1 s of jitter each) between a request's five attempts:
    # 8 requests four at a time took ~2 x 15 s before the breaker.  Now the four first attempts, refused together,
    # open it; the two requests that had to wait their first backoff (<= 2 s) then fail without a call.
    client, _ = _gone_after_its_check(wh, "down-default", policy=RetryPolicy(), max_concurrency=4)
    started = time.monotonic()
    results = client.run_sync("down-default", _prompts(*(f"mkqa {n}" for n in range(8))), stage="t")
    assert time.monotonic() - started < 5.0
    assert [r.status for r in results] == ["failed"] * 8
    assert 3 <= sum(r.attempts for r in results) <= 4  # the first wave's, and none after the breaker opened


def test_a_later_run_calls_a_revived_endpoint_again(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    client, port = _gone_after_its_check(wh, "revived")
    first = client.run_sync("revived", _prompts("xray", "yankee"), stage="t")
    assert [(r.status, r.attempts) for r in first] == [("failed", 3), ("failed", 0)]

    # a later run: a new process starts with a closed breaker; this one lets a probe through once
    # REPROBE_AFTER_S has passed (made 0 here instead of waiting)
    monkeypatch.setattr(client_module, "REPROBE_AFTER_S", 0.0)
    with _served_on(port) as revived:
        second = client.run_sync("revived", _prompts("xray", "yankee"), stage="t")
        assert [r.status for r in second] == ["ok", "ok"]  # called, not served from a cache of the failure
        assert len(revived.calls) == 2


def test_timeouts_429_and_5xx_in_a_row_never_open_the_breaker(server: FakeLLMServer, wh: Warehouse) -> None:
    # 4 requests one at a time, each met by a timeout, a 429 and a 503 before its answer: 12 failures in a row, none
    # of them a refused connection (a live server), so every request is retried to its answer (4 attempts here)
    for name in ("zulu1", "zulu2", "zulu3", "zulu4"):
        server.script(name, Fault.hang(5), Fault.with_status(429), Fault.with_status(503))
    policy = POLICY.model_copy(update={"attempts": 4})
    client = LLMClient(wh, _registry(server, max_concurrency=1, timeout=0.5), policy=policy, sleep=SleepRecorder())
    results = client.run_sync("fake", _prompts("zulu1", "zulu2", "zulu3", "zulu4"), stage="t")
    assert [(r.status, r.attempts) for r in results] == [("ok", 4)] * 4
    assert len(server.calls) == 16


def test_an_open_breaker_stops_its_own_model_only(server: FakeLLMServer, wh: Warehouse) -> None:
    gone, _ = _gone_after_its_check(wh, "down-beside")
    client = LLMClient(wh, Registry(models=(*gone.registry.models, *_registry(server).models), source="test"),
                       policy=POLICY, sleep=SleepRecorder())
    assert [r.status for r in client.run_sync("down-beside", _prompts("alpha", "bravo"), stage="t")] == ["failed"] * 2
    assert [r.status for r in client.run_sync("fake", _prompts("alpha", "bravo"), stage="t")] == ["ok"] * 2


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


def test_a_retried_429_counts_two_calls_against_max_calls_and_a_cached_answer_none(
    server: FakeLLMServer, wh: Warehouse
) -> None:
    server.script("alpha", Fault.with_status(429, "slow down"))
    client = LLMClient(wh, _registry(server, max_concurrency=1), policy=POLICY, sleep=SleepRecorder())
    ledger = BudgetLedger(Budget(max_calls=3))
    first = client.run_sync("fake", _prompts("alpha", "bravo", "charlie"), stage="t", budget=ledger)
    # alpha is sent twice (the 429, then its answer), bravo once: three calls, so charlie does not fit
    assert [r.status for r in first] == ["ok", "ok", "skipped_budget"]
    assert (ledger.calls, len(server.calls)) == (3, 3)

    ledger = BudgetLedger(Budget(max_calls=1))
    second = client.run_sync("fake", _prompts("alpha", "bravo", "charlie"), stage="t", budget=ledger)
    assert [r.status for r in second] == ["cached", "cached", "ok"]
    assert (ledger.calls, len(server.calls)) == (1, 4)


def test_a_retry_the_budget_has_no_room_for_stops_the_request_and_records_the_paid_attempt(
    server: FakeLLMServer, wh: Warehouse
) -> None:
    server.script("delta", Fault.with_status(503, "overloaded"))
    client = LLMClient(wh, _registry(server, max_concurrency=1), policy=POLICY, sleep=SleepRecorder())
    [stopped, later] = client.run_sync("fake", _prompts("delta", "echo"), stage="t", budget=Budget(max_calls=1))
    assert (stopped.status, stopped.attempts, later.status) == ("skipped_budget", 1, "skipped_budget")
    assert stopped.error is not None and stopped.error.startswith("stopped by the budget after 1 attempts: ")
    assert "HTTP 503" in stopped.error and "overloaded" in stopped.error
    assert len(server.calls) == 1
    row = _row(wh, stopped.request_hash)
    assert (row["status"], row["attempts"], row["error"]) == ("failed", 1, stopped.error)  # served again on a rerun


def test_a_failed_attempt_spends_its_estimated_tokens(server: FakeLLMServer, wh: Warehouse) -> None:
    # estimate per attempt 7 tokens, reported usage 5 (see the token budget test). Limit 19: m1's 500 keeps its
    # estimate (7), m1's retry fits (7 + 7 = 14) and settles to 5 (12), m2 fits (12 + 7 = 19) and settles (17),
    # m3 needs 17 + 7 = 24 and stops the run.  Were the 500 free, m3 would fit (5 + 5 + 7 = 17).
    server.script("m1", Fault.with_status(500))
    client = LLMClient(wh, _registry(server, max_concurrency=1), policy=POLICY, sleep=SleepRecorder())
    ledger = BudgetLedger(Budget(max_tokens=19))
    results = client.run_sync("fake", _prompts("m1", "m2", "m3", "m4", max_tokens=4), stage="t", budget=ledger)
    assert [r.status for r in results] == ["ok", "ok", "skipped_budget", "skipped_budget"]
    assert (ledger.calls, ledger.tokens) == (3, 17)


def _side_by_side(*batches: Callable[[], list[CallResult]]) -> list[list[CallResult]]:
    """Run each batch in its own thread, all released at once; their results in the order given."""
    start = threading.Barrier(len(batches))
    results: list[list[CallResult]] = [[] for _ in batches]

    def run(position: int) -> None:
        start.wait()
        results[position] = batches[position]()

    threads = [threading.Thread(target=run, args=(position,)) for position in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_parallel_batches_of_separate_clients_threads_and_event_loops_share_the_models_concurrency(
    wh: Warehouse,
) -> None:
    with FakeLLMServer(delay=0.2, lifetime=30) as slow:
        # two clients, as two cells of a flow build theirs; one batch from a plain thread, one from its own loop
        first, second = (LLMClient(wh, _registry(slow, max_concurrency=2), policy=POLICY) for _ in range(2))
        results = _side_by_side(
            lambda: first.run_sync("fake", _prompts(*(f"left {i}" for i in range(6))), stage="t"),
            lambda: asyncio.run(second.run("fake", _prompts(*(f"right {i}" for i in range(6))), stage="t")),
        )
        assert [r.status for batch in results for r in batch] == ["ok"] * 12
        assert slow.max_in_flight == 2  # one limit of 2 for the model, not 2 per batch


@pytest.mark.parametrize("limit", [{"rpm": 30}, {"tpm": 300}])
def test_the_rate_limits_pace_every_batch_of_the_model_together(
    server: FakeLLMServer, wh: Warehouse, limit: dict[str, int]
) -> None:
    # 30 requests a minute is a burst of 30, then one every 2 s; so is 300 tokens a minute for requests of
    # 10 estimated tokens each ("question rNN" is ceil(12 / 4) = 3, plus max_tokens 7). Two batches of 16 and
    # 15: the 31st request waits 2 s. Were the limits per batch, no request would wait.
    client = LLMClient(wh, _registry(server, max_concurrency=4, **limit), policy=POLICY)  # the fake's backlog is short
    _side_by_side(*(
        lambda names=names: client.run_sync("fake", _prompts(*names, max_tokens=7), stage="t")
        for names in ([f"r{i:02d}" for i in range(16)], [f"r{i:02d}" for i in range(16, 31)])
    ))
    arrivals = sorted(call.at - server.calls[0].at for call in server.calls)
    assert len(arrivals) == 31
    assert arrivals[29] < 1.5  # the burst was not held back
    assert arrivals[30] >= 1.8


def test_concurrency_never_exceeds_the_model_limit(wh: Warehouse) -> None:
    with FakeLLMServer(delay=0.1, lifetime=30) as slow:
        results = LLMClient(wh, _registry(slow, max_concurrency=3), policy=POLICY).run_sync(
            "fake", _prompts(*(f"n{i}" for i in range(9))), stage="t")
        assert [r.status for r in results] == ["ok"] * 9
        assert slow.max_in_flight == 3  # reached, and never more


def test_the_answer_is_the_reply_past_an_echo_of_the_prompt_whether_called_or_cached(
    server: FakeLLMServer, wh: Warehouse
) -> None:
    server.answer("Capital of Peru?", lambda prompt: f"You asked: {prompt}\n\nLima")
    server.answer("Capital of Chile?", "The capital of Chile is Santiago.")
    echoed = LLMRequest(messages=[{"role": "system", "content": "One word."}, {"role": "user", "content": "Capital of Peru?"}])
    plain = LLMRequest(messages=[{"role": "user", "content": "Capital of Chile?"}])
    client = LLMClient(wh, _registry(server, mode="chat"), policy=POLICY)
    for expected_status in ("ok", "cached"):
        first, second = client.run_sync("fake", [echoed, plain], stage="t")
        assert (first.status, second.status) == (expected_status, expected_status)
        assert first.response is not None and first.response.text == "You asked: One word.\nCapital of Peru?\n\nLima"
        assert first.answer == "\n\nLima"
        assert second.answer == "The capital of Chile is Santiago."  # it repeats a few words only: no echo


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
