"""Spending limits for a stage's model calls, and the estimate printed before it pays.

Token counts before a call are estimates: the prompt's characters / 4 (a
common rule of thumb for English and Latin scripts; CJK text uses more tokens
per character, so set budgets with some margin) plus ``max_tokens`` — the most
the answer may use.  The estimate is only used to decide whether a call may
start and to pace tokens per minute; what is counted once it returns is the
provider's reported usage.

Every attempt sent is spent, retries included: a request retried after a 429
is two calls against ``max_calls``.  An attempt that returned no usage (a 429,
a 5xx, a timeout, a malformed body) counts its estimate: what the provider
billed for it cannot be known — a timed-out request may have generated its
whole answer — and a budget is a ceiling.  Answers served from the warehouse
cache cost nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4


class Budget(BaseModel):
    """Limits for one run of a stage; any combination, None meaning unlimited.

    Only requests sent count, each retry among them: answers served from the
    warehouse cache are free, so rerunning a stopped stage with a fresh budget
    resumes where it stopped.
    """

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = Field(None, ge=0, description="Input + output tokens.")
    max_usd: float | None = Field(None, ge=0)
    max_calls: int | None = Field(None, ge=0, description="Requests sent, each retry included.")


def estimated_input_tokens(request: LLMRequest) -> int:
    return -(-request.input_chars // CHARS_PER_TOKEN)


def estimated_tokens(request: LLMRequest) -> int:
    """Upper-end guess of a call's tokens: the prompt's estimate plus the whole ``max_tokens``."""
    return estimated_input_tokens(request) + request.max_tokens


def estimate_cost(spec: ModelSpec, requests: Sequence[LLMRequest]) -> tuple[int, float]:
    """(tokens, USD) that ``requests`` may cost at most on ``spec``, by the estimate above."""
    tokens_in = sum(estimated_input_tokens(r) for r in requests)
    tokens_out = sum(r.max_tokens for r in requests)
    return tokens_in + tokens_out, spec.cost_usd(tokens_in, tokens_out)


@dataclass
class _Reservation:
    tokens: int
    usd: float


class BudgetLedger:
    """What a run has spent and has in flight against its :class:`Budget`, over every model it calls.

    Each attempt — a first try or a retry — reserves its estimate before it is
    sent and settles when it ends, so concurrent calls cannot jointly
    overshoot.  The first refusal is final for the run: the stage stops rather
    than filling the remaining room with whichever later requests happen to
    be small.  One ledger can be shared by the batches and stages of a flow
    run (see :func:`run_ledger`); a lock keeps it exact when stage tasks run in
    threads.
    """

    def __init__(self, budget: Budget | None) -> None:
        self.budget = budget or Budget()
        self.calls = 0
        self.tokens = 0
        self.usd = 0.0
        self.exhausted = False
        self._reserved_tokens = 0
        self._reserved_usd = 0.0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, budget: Budget | BudgetLedger | None) -> BudgetLedger:
        """``budget`` itself when it is a ledger already (shared spending), else a fresh ledger over it."""
        return budget if isinstance(budget, BudgetLedger) else cls(budget)

    def reserve(self, request: LLMRequest, spec: ModelSpec) -> _Reservation | None:
        """Room for one more attempt, or None when it could exceed a limit (and from then on)."""
        tokens = estimated_tokens(request)
        usd = spec.cost_usd(estimated_input_tokens(request), request.max_tokens)
        limits = self.budget
        with self._lock:
            if self.exhausted:
                return None
            over = (
                (limits.max_calls is not None and self.calls + 1 > limits.max_calls)
                or (limits.max_tokens is not None and self.tokens + self._reserved_tokens + tokens > limits.max_tokens)
                or (limits.max_usd is not None and self.usd + self._reserved_usd + usd > limits.max_usd)
            )
            if over:
                self.exhausted = True
                log.warning(
                    "budget reached after %d calls, %d tokens, $%.4f (limits: %s); the remaining requests are skipped",
                    self.calls, self.tokens, self.usd, limits.model_dump(exclude_none=True),
                )
                return None
            self.calls += 1
            self._reserved_tokens += tokens
            self._reserved_usd += usd
        return _Reservation(tokens, usd)

    def settle(self, reservation: _Reservation, used: tuple[int, float] | None) -> None:
        """Replace an attempt's estimate by its reported usage, (tokens, USD); without one the estimate stays spent."""
        tokens, usd = used if used is not None else (reservation.tokens, reservation.usd)
        with self._lock:
            self._reserved_tokens -= reservation.tokens
            self._reserved_usd -= reservation.usd
            self.tokens += tokens
            self.usd += usd


_run_ledgers: dict[str, BudgetLedger] = {}
_run_ledgers_lock = threading.Lock()


def run_ledger(run_id: str, budget: Budget | None) -> BudgetLedger:
    """The one ledger of flow run ``run_id``: every stage of the run spends from the same budget."""
    with _run_ledgers_lock:
        if run_id not in _run_ledgers:
            _run_ledgers[run_id] = BudgetLedger(budget)
        return _run_ledgers[run_id]
