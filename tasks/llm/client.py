"""Call discipline for every model call: cache, budget, concurrency, rate limits, retries.

:meth:`LLMClient.run` takes a batch of requests for one model and returns one :class:`CallResult` per
request, in order; one item failing never fails the batch.  An ``ok`` row of ``llm_calls`` answers a
request without a call (``failed`` rows are not served); every attempt must fit the :class:`Budget`, and
the first that does not stops the rest as ``skipped_budget``; the concurrency and rate limits are the
model's, shared by every batch of the process (:class:`_CallLoop`); before a model's first call the process
checks it (:mod:`tasks.llm.check`) and a model that fails makes no call; transient errors are retried, a
refused request is not, and an endpoint refusing connections ``UNREACHABLE_AFTER`` times, or requests
alike ``REFUSED_ALIKE_AFTER`` times, stops its model's calls (:class:`_Breaker`); outcomes are stored as
each call ends (:class:`_GroupCommit`), and ``CallResult.answer`` is the reply past any echo of the prompt.

See ``docs/models-and-backends.md``, "Calls: limits, retries, the call cache, budgets and prompts" and
"Your own server".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from tasks.errors import ConfigError
from tasks.llm.backends import Backend, NegotiatesStructure, create_backend
from tasks.llm.budget import Budget, BudgetLedger, estimate_cost, estimated_tokens
from tasks.llm.cache import FinishedCall, cached_responses, request_hash, store_calls
from tasks.llm.check import ModelCheck, ModelUnusableError, check_model
from tasks.llm.endpoints import EndpointMemory, Negotiation
from tasks.llm.parsing import echo_end
from tasks.llm.registry import IN_PROCESS_BACKENDS, ModelSpec, Registry
from tasks.llm.server_errors import connection_refused
from tasks.llm.types import (
    CallResult,
    LLMError,
    LLMRequest,
    LLMResponse,
    MalformedResponseError,
    PermanentLLMError,
    RefusedRequestError,
    TransientLLMError,
)
from tasks.progress import Progress
from tasks.retry import RetryPolicy
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")
_RETRYABLE = (TransientLLMError, MalformedResponseError)
#: Refused connections in a row after which a model's endpoint counts as down.  One refusal can be a server
#: restarting between two requests, and the first attempts of a batch fail together (``max_concurrency`` of them
#: at once); three in a row, with no answer between them, is an endpoint that is not there.  A batch then spends
#: about one backoff instead of every request's retries (minutes for a handful of requests).
UNREACHABLE_AFTER = 3
#: Identical refusals in a row (same status, same words) after which a model's requests stop: a wrong model id, a
#: refused key or a field the server will not take fails every request the same way, and paying for each in turn
#: tells nothing more.  A refusal that quotes each request's own numbers (a prompt too long) is never identical.
REFUSED_ALIKE_AFTER = 3
#: Seconds an open breaker fails calls before it lets one through to see whether the endpoint is back: a process
#: that outlives a run (a worker, a notebook) then resumes calling a revived endpoint; a new process starts closed.
#: A failed check waits as long before it is made again.
REPROBE_AFTER_S = 30.0


class BreakerOpenError(PermanentLLMError):
    """The model's breaker is open: its requests fail without a call until it lets one through again."""


class EndpointUnreachableError(BreakerOpenError):
    """The model's endpoint refused its last connections."""


class RepeatedRefusalError(BreakerOpenError):
    """The model's server refused its last requests, each the same way."""


class _Breaker:
    """One model's circuit breaker: opens after ``UNREACHABLE_AFTER`` refused connections in a row, or after
    ``REFUSED_ALIKE_AFTER`` requests in a row that the server refused with the same words.

    Refused connections count when nothing listens, the host cannot be
    reached, DNS or TLS fail before a request is sent; a timeout, a 429 or a
    bare 5xx comes from a live server and stays a transient error retried with
    backoff.  Refused requests (:class:`RefusedRequestError`) count while each
    is refused like the one before.  Any other outcome closes the breaker.
    While open, every attempt fails at once; after ``REPROBE_AFTER_S`` the next
    attempt is sent, and one more failure of the same kind opens it again.
    Used on the call loop's thread only, so it needs no lock.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._refused = 0
        self._alike: tuple[str, int] = ("", 0)
        self._opened_at: float | None = None
        self._open: BreakerOpenError | None = None

    def check(self) -> None:
        """Raise the open breaker's error while it is open and not yet due for a probe."""
        if self._opened_at is None or self._open is None:
            return
        if time.monotonic() - self._opened_at < REPROBE_AFTER_S:
            raise type(self._open)(str(self._open))  # the same words for every request it stops, each its own error
        # half open: this attempt probes, one more failure of the kind reopens at once
        self._opened_at = None
        if isinstance(self._open, EndpointUnreachableError):
            self._refused = UNREACHABLE_AFTER - 1
        else:
            self._alike = (self._alike[0], REFUSED_ALIKE_AFTER - 1)

    def answered(self) -> None:
        self._refused, self._alike = 0, ("", 0)

    def failed(self, error: LLMError) -> LLMError:
        """Count ``error``; the error the attempt ends with (the breaker's once a refused connection opens it)."""
        if connection_refused(error):
            self._alike = ("", 0)
            self._refused += 1
            if self._refused < UNREACHABLE_AFTER:
                return error
            return self._opens(EndpointUnreachableError(
                f"endpoint unreachable: model {self._name!r} refused {UNREACHABLE_AFTER} connections in a row"
                f" (last: {error}); its calls stop here, a later run tries again"))
        self._refused = 0
        if not isinstance(error, RefusedRequestError):
            self._alike = ("", 0)
            return error
        signature, count = self._alike
        self._alike = (error.signature, count + 1 if error.signature == signature else 1)
        if self._alike[1] >= REFUSED_ALIKE_AFTER:
            self._opens(RepeatedRefusalError(
                f"not sent: the server refused model {self._name!r}'s last {self._alike[1]} requests the same way"
                f" ({error}); its calls stop here, a later run tries again"))
        return error  # this request was refused for itself: its own reason, not the breaker's

    def _opens(self, error: BreakerOpenError) -> BreakerOpenError:
        if self._opened_at is None:
            log.error("model %r: its remaining calls fail without a call: %s", self._name, error)
        self._opened_at, self._open = time.monotonic(), error
        return error


class _Limits:
    """One model's concurrency gate, requests-/tokens-per-minute limiters (leaky buckets), circuit breaker and the
    outcome of its check per home (with the structured-output mode its calls use)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.gate = asyncio.Semaphore(spec.max_concurrency)
        self.breaker = _Breaker(spec.name)
        self.checking = asyncio.Lock()
        self.checks: dict[Path, tuple[ModelCheck, float, Negotiation | None]] = {}
        self._requests = AsyncLimiter(spec.rpm, 60) if spec.rpm else None
        self._tokens = AsyncLimiter(spec.tpm, 60) if spec.tpm else None
        self._tpm = spec.tpm or 0

    async def pace(self, request: LLMRequest) -> None:
        """Wait until one more request, with its estimated tokens, fits in the model's rates."""
        if self._requests is not None:
            await self._requests.acquire()
        if self._tokens is not None:
            # one request larger than a minute's allowance still goes, after waiting for a full bucket
            await self._tokens.acquire(min(estimated_tokens(request), self._tpm))

    async def checked(self, spec: ModelSpec, home: Path) -> Negotiation | None:
        """The model's check in ``home``, made once per process (a failed one again after ``REPROBE_AFTER_S``);
        raises :class:`ModelUnusableError` when it failed.  In-process models need none."""
        if spec.backend in IN_PROCESS_BACKENDS:
            return None
        async with self.checking:
            known = self.checks.get(home)
            if known is None or (not known[0].usable and time.monotonic() - known[1] >= REPROBE_AFTER_S):
                memory = EndpointMemory(home)
                # in a worker thread, on its own loop: the check reads files and, for a key in a Secret block,
                # the Prefect API, which must not hold up other models' calls on this loop
                check = await asyncio.to_thread(check_model, spec, memory)
                negotiation = Negotiation(spec, memory, memory.get(spec)) if check.usable else None
                known = self.checks[home] = (check, time.monotonic(), negotiation)
                if check.usable:
                    log.info("model %r checked: structured output by %s", spec.name, check.structured or "its backend")
                else:
                    log.error("model %r failed its check, so none of its calls are made: %s", spec.name, check.reason)
        check, _, negotiation = known
        if not check.usable:
            raise ModelUnusableError(f"model {spec.name!r} failed its check, so none of its calls were made:"
                                     f" {check.reason} (babelbench models check {spec.name} shows the whole check)")
        return negotiation


class _CallLoop:
    """The event loop, in a daemon thread, on which every model call of the process runs.

    A model's limits must hold across all the batches of a process — a flow
    runs its cells in parallel threads, each with its own client and its own
    event loop — but asyncio's semaphores and aiolimiter's limiters belong to
    the loop they are first used on.  So batches do not call from their own
    loops: they hand their calls to this one, where each model has one
    :class:`_Limits`.  Limits are keyed by the registry entry (every field):
    every client built from one registry shares them, and an entry with other
    limits or another endpoint is another model.  A forked child gets its own
    loop (see :func:`_call_loop`).
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._limits: dict[ModelSpec, _Limits] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self.loop.run_forever, name="babelbench-llm-calls", daemon=True).start()

    def limits(self, spec: ModelSpec) -> _Limits:
        with self._lock:
            if spec not in self._limits:
                self._limits[spec] = _Limits(spec)
            return self._limits[spec]

    def submit(self, calls: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``calls`` on this loop in the caller's context, so a Prefect run's log context goes along."""
        return asyncio.run_coroutine_threadsafe(_in_context(calls, contextvars.copy_context()), self.loop)


async def _in_context(calls: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    return await asyncio.get_running_loop().create_task(calls, context=context)


_current_loop: _CallLoop | None = None
_current_loop_lock = threading.Lock()


def _call_loop() -> _CallLoop:
    """This process's call loop, started on first use (and again in a forked child, which has no thread of it)."""
    global _current_loop
    with _current_loop_lock:
        if _current_loop is None or _current_loop.pid != os.getpid():
            _current_loop = _CallLoop()
        return _current_loop


@dataclass
class _Batch:
    """One run's requests for one model: the answers the cache had and the requests left to call."""

    spec: ModelSpec
    stage: str
    keys: list[str]  # one per request, in order
    requests: dict[str, LLMRequest]  # the distinct requests by key
    outcomes: dict[str, CallResult]
    pending: dict[str, LLMRequest]
    ledger: BudgetLedger

    def results(self) -> list[CallResult]:
        """One result per request, in order, each with the model's own answer; logs the batch's summary."""
        answered = {key: _answered(result, self.requests[key]) for key, result in self.outcomes.items()}
        results = [answered[key] for key in self.keys]
        _log_summary(self.spec.name, self.stage, results)
        return results


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
        paid call the estimate of what the batch may cost is logged.  The calls
        run on the process's call loop; awaiting them leaves this loop free.
        """
        batch = self._batch(model_name, requests, stage, budget)
        if batch.pending:
            batch.outcomes |= await asyncio.wrap_future(self._submit(batch))
        return batch.results()

    def run_sync(
        self, model_name: str, requests: Sequence[LLMRequest], *, stage: str, budget: Budget | BudgetLedger | None = None
    ) -> list[CallResult]:
        """:meth:`run` from synchronous code (a plain Prefect task, a worker thread); coroutines await :meth:`run`."""
        batch = self._batch(model_name, requests, stage, budget)
        if batch.pending:
            calls = self._submit(batch)
            try:
                batch.outcomes |= calls.result()
            except BaseException:
                calls.cancel()  # interrupted while waiting (Ctrl-C): the batch's calls stop too
                raise
        return batch.results()

    def estimate_cost(self, model_name: str, requests: Sequence[LLMRequest]) -> tuple[int, float]:
        """(tokens, USD) the requests not yet cached may cost at most: what to print before paying."""
        spec = self.registry.get(model_name)
        by_key = {request_hash(spec, request): request for request in requests}
        cached = cached_responses(self.wh, by_key)
        return estimate_cost(spec, [request for key, request in by_key.items() if key not in cached])

    # -- internals -------------------------------------------------------------------
    def _batch(
        self, model_name: str, requests: Sequence[LLMRequest], stage: str, budget: Budget | BudgetLedger | None
    ) -> _Batch:
        """The batch's cached answers and what is left to call, read in the caller's thread; logs the estimate."""
        spec = self.registry.get(model_name)
        _check_modes(spec, requests)
        keys = [request_hash(spec, request) for request in requests]
        by_key = dict(zip(keys, requests))
        outcomes = {key: CallResult("cached", key, response=response)
                    for key, response in cached_responses(self.wh, keys).items()}
        pending = {key: request for key, request in by_key.items() if key not in outcomes}
        if pending:
            tokens, usd = estimate_cost(spec, list(pending.values()))
            log.info("%s on %s: %d calls to make (%d cached), at most ~%d tokens, ~$%.4f",
                     stage, model_name, len(pending), len(outcomes), tokens, usd)
        return _Batch(spec, stage, keys, by_key, outcomes, pending, BudgetLedger.of(budget))

    def _submit(self, batch: _Batch) -> concurrent.futures.Future[dict[str, CallResult]]:
        calls = _call_loop()
        # made here, in the caller's thread: its Prefect run is the one the progress belongs to
        progress = Progress(f"{batch.stage} {batch.spec.name}", len(batch.pending), "call")
        future = calls.submit(self._call_all(batch, calls.limits(batch.spec), progress))
        future.add_done_callback(lambda _: progress.close())
        return future

    async def _call_all(self, batch: _Batch, limits: _Limits, progress: Progress) -> dict[str, CallResult]:
        """The batch's pending requests, on the call loop, at most the model's concurrency at a time."""
        try:
            negotiation = await limits.checked(batch.spec, Path(self.wh.home))
        except ModelUnusableError as unusable:  # every request fails for it, unsent: rows with the reason, no call
            return {key: CallResult("failed", key, error=str(unusable)) for key in batch.pending}
        # made in a worker thread: loading a local model takes seconds, and other models' calls share this loop
        backend = await asyncio.to_thread(create_backend, batch.spec)
        if negotiation is not None and isinstance(backend, NegotiatesStructure):
            backend.use(negotiation)
        outcomes: dict[str, CallResult] = {}

        commits = _GroupCommit(self.wh)

        async def one(key: str, request: LLMRequest, progress: Progress) -> None:
            async with limits.gate:
                result, finished = await self._call_one(backend, limits, batch, key, request)
            if finished is not None:
                await commits.store(finished)
            outcomes[key] = result
            progress.advance()

        try:
            async with asyncio.TaskGroup() as group:
                for key, request in batch.pending.items():
                    group.create_task(one(key, request, progress))
        except BaseExceptionGroup as failure:
            raise failure.exceptions[0]  # the bug itself, not a group of one
        finally:
            await backend.aclose()
        return outcomes

    async def _call_one(
        self, backend: Backend, limits: _Limits, batch: _Batch, key: str, request: LLMRequest
    ) -> tuple[CallResult, FinishedCall | None]:
        """One request: attempts while the budget has room and the retry policy allows; its outcome and what to store."""
        spec, ledger = batch.spec, batch.ledger
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.policy.attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_RETRYABLE),
            sleep=self._sleep,
            reraise=True,
            before_sleep=_log_retry,
        )
        sent = 0
        response: LLMResponse | None = None
        last_failure: LLMError | None = None
        error: str | None = None
        stopped_by_budget = False
        try:
            async for attempt in retrying:
                with attempt:
                    limits.breaker.check()
                    reservation = ledger.reserve(request, spec)
                    if reservation is None:
                        stopped_by_budget = True
                        break
                    sent += 1
                    try:
                        await limits.pace(request)
                        response = await backend.complete(request)
                    except LLMError as failure:
                        last_failure = failure
                        ended = limits.breaker.failed(failure)
                        if ended is failure:
                            raise
                        raise ended from failure
                    finally:
                        ledger.settle(reservation, _usage(spec, response))
                    limits.breaker.answered()
        except BreakerOpenError as failure:
            if not sent:  # nothing was sent: no call to record, and a rerun tries it like any failed request
                return CallResult("failed", key, error=str(failure)), None
            error = str(failure)
        except LLMError as failure:
            error = _reason(failure, sent)
        if stopped_by_budget:
            if not sent:
                return CallResult("skipped_budget", key), None
            error = f"stopped by the budget after {sent} attempts: {last_failure}"
        cost = spec.cost_usd(response.input_tokens, response.output_tokens) if response else 0.0
        finished = FinishedCall(key, spec.name, spec, request, batch.stage, sent, response, cost, error)
        if response is not None:
            return CallResult("ok", key, response=response, cost_usd=cost, attempts=sent), finished
        status = "skipped_budget" if stopped_by_budget else "failed"
        return CallResult(status, key, error=error, attempts=sent), finished

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter, unless the server said how long to wait."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, TransientLLMError) and error.retry_after is not None:
            return min(error.retry_after, self.policy.max_delay)
        return self._exponential(state)


class _GroupCommit:
    """Writes finished calls to ``llm_calls`` from the call loop, every call that is waiting in one transaction.

    A DuckDB commit costs milliseconds whatever it holds; one per call, taken
    in turn under the warehouse's write lock, would cap a stage at a few
    hundred calls a second whatever the endpoint allows.  While one write is
    under way the calls that end queue up, and the next write takes them all.
    :meth:`store` returns once its call is committed, so a batch's results are
    only reported after they are safe.
    """

    def __init__(self, wh: Warehouse) -> None:
        self._wh = wh
        self._waiting: list[tuple[FinishedCall, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def store(self, call: FinishedCall) -> None:
        stored = asyncio.get_running_loop().create_future()
        self._waiting.append((call, stored))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        await stored

    async def _write(self) -> None:
        while self._waiting:
            group, self._waiting = self._waiting, []
            try:
                await asyncio.to_thread(store_calls, self._wh, [call for call, _ in group])
            except Exception as failure:  # a broken warehouse: each waiting call raises it
                for _, stored in group:
                    stored.set_exception(failure)
            else:
                for _, stored in group:
                    stored.set_result(None)


def _usage(spec: ModelSpec, response: LLMResponse | None) -> tuple[int, float] | None:
    """(tokens, USD) an attempt reported; None when it returned nothing (the ledger then keeps its estimate)."""
    if response is None:
        return None
    return response.input_tokens + response.output_tokens, spec.cost_usd(response.input_tokens, response.output_tokens)


def _answered(result: CallResult, request: LLMRequest) -> CallResult:
    """``result`` marking where the model's own answer starts: past any echo of the prompt."""
    if result.response is None:
        return result
    start = echo_end(result.response.text, request.prompt_text, at_start=request.mode == "completion")
    return replace(result, answer_start=start)


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
    reasons = Counter(result.error for result in results if result.status == "failed" and result.error)
    for reason, count in reasons.most_common(3):  # what to fix, once per distinct reason (a refused field, say)
        log.warning("%s on %s: %d calls failed: %s", stage, model_name, count, reason)
    if counts["skipped_budget"]:
        log.warning("%s on %s: %d requests skipped by the budget; rerun with a new budget to resume",
                    stage, model_name, counts["skipped_budget"])
