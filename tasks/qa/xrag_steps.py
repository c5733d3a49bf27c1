"""One model step of the XRAG chain run as a batch, and its outcome per key (a ``qa_steps`` row).

A step that could not be asked because an earlier one failed is still a row:
it carries the earlier failure's status, and its reason names the step and
key where the chain broke, unchanged however many steps further down it is
carried — the operator sees the root cause, not a chain of "because".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tasks.llm import Budget, BudgetLedger, LLMClient, LLMRequest
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import Parsed


@dataclass(frozen=True)
class Step:
    """The outcome of one step for one key; ``value`` is the parsed output when ``status`` is ok."""

    step: str
    key: str
    lang: str
    status: str
    value: Any = None
    reason: str | None = None
    output: str | None = None
    request_hash: str | None = None
    blocked: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def cause(self) -> str:
        """Why this step has no output, as later steps and items report it."""
        return (self.reason or "") if self.blocked else f"{self.step} {self.key}: {self.reason}"

    def block(self, step: str, key: str, lang: str) -> Step:
        """The row of a later step that could not be asked because this one failed."""
        return Step(step, key, lang, self.status, reason=self.cause, blocked=True)

    def parsed_json(self) -> str | None:
        """The parsed output as JSON: a summary's text, simple pairs, questions with the facts they use, an answer."""
        if not self.ok:
            return None
        value = self.value
        if self.step == "simple_qa":
            value = [{"question": q, "answer": a} for q, a in value]
        elif self.step == "question":
            value = [{"question": q.question, "uses": q.refs, "problem": q.problem} for q in value]
        return json.dumps(value, ensure_ascii=False)


@dataclass
class Batch:
    """The requests of one step, each with the key it answers and how to read its reply; run as one client call."""

    step: str
    jobs: list[tuple[str, str, LLMRequest, Callable[[str], Parsed]]] = field(default_factory=list)

    def add(self, key: str, lang: str, request: LLMRequest, parse: Callable[[str], Parsed]) -> None:
        self.jobs.append((key, lang, request, parse))

    def run(self, client: LLMClient, generator: str, budget: Budget | BudgetLedger) -> dict[str, Step]:
        results = client.run_sync(generator, [job[2] for job in self.jobs], stage=f"xrag-{self.step}", budget=budget)
        steps = {}
        for (key, lang, _, parse), result in zip(self.jobs, results):
            outcome = item_outcome(result, parse)
            steps[key] = Step(self.step, key, lang, outcome.status, outcome.value, outcome.reason,
                              result.response.text if result.response else None, result.request_hash)
        return steps
