"""Call discipline for every model call: cache, budget, concurrency, rate limits, retries.

:meth:`LLMClient.run` takes a batch of requests for one model and returns one
:class:`CallResult` per request, in order.  For each distinct request:

1. an ``ok`` row in the warehouse's ``llm_calls`` answers it without a call
   (status ``cached``); ``failed`` rows are not served, so a rerun retries
   what failed last time;
2. the :class:`Budget` must have room for it, else it is ``skipped_budget``
   and so is every later one — the stage stops cleanly, and a rerun with a new
   budget resumes, since what was done is cached;
3. at most ``max_concurrency`` calls are in flight, paced to the entry's
   ``rpm`` and ``tpm`` (tokens estimated as in :mod:`tasks.llm.budget`); the
   limits hold within one ``run``, so batches run side by side in one process
   each get the full rate;
4. transient errors and malformed replies are retried with exponential backoff
   and jitter, waiting at least what a ``Retry-After`` header asks (capped by
   the policy's ``max_delay``); permanent errors fail at once;
5. the outcome is written to ``llm_calls`` as soon as the call ends, in its own
   transaction, so a crash loses no paid work.

One item failing never fails the batch: its result carries the reason.  An
unexpected exception (a bug) stops the run; the calls finished before it are
already stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter
from tqdm import tqdm

from tasks.dumps.download import RetryPolicy
from tasks.errors import ConfigError
from tasks.llm.backends import Backend, create_backend
from tasks.llm.budget import Budget, BudgetLedger, estimate_cost, estimated_tokens
from tasks.llm.cache import cached_responses, request_hash, store_call
from tasks.llm.registry import ModelSpec, Registry
from tasks.llm.types import CallResult, LLMError, LLMRequest, LLMResponse, MalformedResponseError, TransientLLMError
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
_RETRYABLE = (TransientLLMError, MalformedResponseError)


class _Pacer:
    """Requests- and tokens-per-minute limits of one model for one run (leaky buckets)."""

    def __init__(self, spec: ModelSpec) -> None:
        self._requests = AsyncLimiter(spec.rpm, 60) if spec.rpm else None
        self._tokens = AsyncLimiter(spec.tpm, 60) if spec.tpm else None
        self._tpm = spec.tpm or 0

    async def wait(self, request: LLMRequest) -> None:
        if self._requests is not None:
            await self._requests.acquire()
        if self._tokens is not None:
            # one request larger than a minute's allowance still goes, after waiting for a full bucket
            await self._tokens.acquire(min(estimated_tokens(request), self._tpm))


class LLMClient:
    """Runs batches of requests against the models of ``registry``, caching in ``wh``.

    ``policy`` sets the retries; ``sleep`` is how retries wait (tests inject a
    recorder so nothing blocks).
    """

    def __init__(
        self, wh: Warehouse, registry: Registry, *, policy: RetryPolicy | None = None, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.wh = wh
        self.registry = registry
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._exponential = wait_exponential_jitter(
            multiplier=self.policy.initial_delay, max=self.policy.max_delay, jitter=self.policy.jitter
        )

    async def run(
        self, model_name: str, requests: Sequence[LLMRequest], *, stage: str, budget: Budget | BudgetLedger | None = None
    ) -> list[CallResult]:
        """One result per request, in order; identical requests share one call and one result.

        ``budget`` is a :class:`Budget` for this batch alone, or a :class:`BudgetLedger`
        shared with the other batches of a stage or flow run.  Before the first
        paid call the estimate of what the batch may cost is logged.
        """
        spec = self.registry.get(model_name)
        _check_modes(spec, requests)
        keys = [request_hash(spec, request) for request in requests]
        outcomes: dict[str, CallResult] = {
            key: CallResult("cached", key, response=response) for key, response in cached_responses(self.wh, keys).items()
        }
        pending: dict[str, LLMRequest] = {}
        for key, request in zip(keys, requests):
            if key not in outcomes:
                pending.setdefault(key, request)
        if pending:
            tokens, usd = estimate_cost(spec, list(pending.values()))
            log.info("%s on %s: %d calls to make (%d cached), at most ~%d tokens, ~$%.4f",
                     stage, model_name, len(pending), len(outcomes), tokens, usd)
            ledger = BudgetLedger.of(budget)
            outcomes |= await self._call_all(spec, pending, stage, ledger)
        results = [outcomes[key] for key in keys]
        _log_summary(model_name, stage, results)
        return results

    def run_sync(
        self, model_name: str, requests: Sequence[LLMRequest], *, stage: str, budget: Budget | BudgetLedger | None = None
    ) -> list[CallResult]:
        """:meth:`run` from synchronous code (a plain Prefect task); not from inside a running event loop."""
        return asyncio.run(self.run(model_name, requests, stage=stage, budget=budget))

    def estimate_cost(self, model_name: str, requests: Sequence[LLMRequest]) -> tuple[int, float]:
        """(tokens, USD) the requests not yet cached may cost at most: what to print before paying."""
        spec = self.registry.get(model_name)
        by_key = {request_hash(spec, request): request for request in requests}
        cached = cached_responses(self.wh, by_key)
        return estimate_cost(spec, [request for key, request in by_key.items() if key not in cached])

    # -- internals -------------------------------------------------------------------
    async def _call_all(
        self, spec: ModelSpec, pending: dict[str, LLMRequest], stage: str, ledger: BudgetLedger
    ) -> dict[str, CallResult]:
        backend = create_backend(spec)
        pacer = _Pacer(spec)
        gate = asyncio.Semaphore(spec.max_concurrency)
        outcomes: dict[str, CallResult] = {}

        async def one(key: str, request: LLMRequest, bar: tqdm) -> None:
            async with gate:
                outcomes[key] = await self._call_one(backend, spec, key, request, stage, ledger, pacer)
            bar.update()

        try:
            with tqdm(total=len(pending), desc=f"{stage}: {spec.name}", unit="call", disable=None) as bar:
                async with asyncio.TaskGroup() as group:
                    for key, request in pending.items():
                        group.create_task(one(key, request, bar))
        except BaseExceptionGroup as failure:
            raise failure.exceptions[0]  # the bug itself, not a group of one
        finally:
            await backend.aclose()
        return outcomes

    async def _call_one(
        self, backend: Backend, spec: ModelSpec, key: str, request: LLMRequest, stage: str,
        ledger: BudgetLedger, pacer: _Pacer,
    ) -> CallResult:
        reservation = ledger.reserve(request, spec)
        if reservation is None:
            return CallResult("skipped_budget", key)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_RETRYABLE),
            sleep=self._sleep,
            reraise=True,
            before_sleep=_log_retry,
        )
        attempts = 0
        response: LLMResponse | None = None
        error: str | None = None
        try:
            async for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    await pacer.wait(request)
                    response = await backend.complete(request)
        except LLMError as exc:
            error = _reason(exc, attempts)
        cost = spec.cost_usd(response.input_tokens, response.output_tokens) if response else 0.0
        await asyncio.to_thread(
            store_call, self.wh, key=key, model_name=spec.name, spec=spec, request=request, stage=stage,
            attempts=attempts, response=response, cost_usd=cost, error=error,
        )
        ledger.settle(reservation, response.input_tokens + response.output_tokens if response else 0, cost)
        if response is None:
            return CallResult("failed", key, error=error, attempts=attempts)
        return CallResult("ok", key, response=response, cost_usd=cost, attempts=attempts)

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter, unless the server said how long to wait."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, TransientLLMError) and error.retry_after is not None:
            return min(error.retry_after, self.policy.max_delay)
        return self._exponential(state)


def _check_modes(spec: ModelSpec, requests: Sequence[LLMRequest]) -> None:
    """A chat request for a completion model (or the reverse) is a caller's bug: stop before any call."""
    for position, request in enumerate(requests):
        if request.mode != spec.mode:
            wanted = "messages" if spec.mode == "chat" else "a prompt"
            raise ConfigError(f"request {position}: model {spec.name!r} is a {spec.mode} model; give it {wanted}")


def _reason(error: LLMError, attempts: int) -> str:
    if isinstance(error, TransientLLMError):
        return f"transient, gave up after {attempts} attempts: {error}"
    if isinstance(error, MalformedResponseError):
        return f"malformed response, {attempts} attempts: {error}"
    return f"permanent: {error}"


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning("attempt %d failed (%s); retrying in %.2f s", state.attempt_number, error, delay)


def _log_summary(model_name: str, stage: str, results: Sequence[CallResult]) -> None:
    counts = Counter(result.status for result in results)
    spent = sum(result.cost_usd for result in results)
    log.info("%s on %s: %s; $%.4f spent", stage, model_name, dict(counts), spent)
    if counts["skipped_budget"]:
        log.warning("%s on %s: %d requests skipped by the budget; rerun with a new budget to resume",
                    stage, model_name, counts["skipped_budget"])
