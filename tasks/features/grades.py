"""The features an LLM grades from 1 to 5: overlap with the reference answer, and fluency.

MIRAGE-BENCH asks a model for an ``answer_overlap_score`` (1 hallucination
or off topic, 2 honest refusal, 3 notable errors, 4 acceptable, 5 fully
accurate) and a ``fluency_score``.  The grade is read robustly — the last
``[[n]]`` in the reply, else a final "grade/score/rating: n" — and a reply
without one is a ``parse_failed`` row with its reason, never a guess.  The
overlap grade follows the reference rules of the overlap features (gold
answer, else a reference system's answer, never a system's own).  Calls go
through the model layer: cache, the run's budget, retries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tasks.features.deterministic import NO_RESPONSE, Value
from tasks.features.inputs import FeatureInput
from tasks.inference.prompting import language_name
from tasks.llm import BudgetLedger, LLMClient, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import Parsed, failed

STAGE = "features"
TEMPLATES = {"answer_overlap_score": "grade_overlap", "fluency_score": "grade_fluency"}
_BRACKETED = re.compile(r"\[\[\s*([1-5])\s*\]\]")
_LABELLED = re.compile(r"(?:grade|score|rating)\s*[:=]?\s*\**\s*([1-5])\b", re.IGNORECASE)


def parse_grade(text: str, *, primed: bool = False) -> Parsed:
    """The grade 1–5 (value: int); ``primed``: the prompt opened ``[[`` so the reply starts with the digit."""
    if primed and (opened := re.match(r"\s*([1-5])\b", text)):
        return Parsed("ok", int(opened.group(1)))
    found = _BRACKETED.findall(text) or _LABELLED.findall(text)
    return Parsed("ok", int(found[-1])) if found else failed("no grade [[1]]-[[5]] in the reply")


def graded(name: str, inputs: Sequence[FeatureInput], client: LLMClient, grader: str,
           budget: BudgetLedger | None) -> list[Value]:
    """``answer_overlap_score`` or ``fluency_score`` of every response, graded by ``grader``."""
    spec = client.registry.get(grader)
    asked: dict[int, Value | None] = {}
    requests = []
    for n, item in enumerate(inputs):
        if item.status != "ok":
            asked[n] = NO_RESPONSE
        elif name == "answer_overlap_score" and item.reference_is_own:
            asked[n] = Value(None, "excluded", "this system's answers are the reference: never graded against itself")
        elif name == "answer_overlap_score" and not item.reference:
            asked[n] = Value(None, "not_applicable", "no reference answer")
        else:
            asked[n] = None
            variables = ({"question": item.question, "reference": item.reference, "answer": item.answer_text}
                         if name == "answer_overlap_score" else
                         {"language": language_name(item.lang), "answer": item.answer_text})
            requests.append(prompt_request(spec, TEMPLATES[name], max_tokens=64,
                                           stop=("\n",) if spec.mode == "completion" else None, **variables))
    results = iter(client.run_sync(grader, requests, stage=STAGE, budget=budget))
    primed = spec.mode == "completion"
    values = []
    for n in range(len(inputs)):
        if asked[n] is not None:
            values.append(asked[n])
            continue
        outcome = item_outcome(next(results), lambda reply: parse_grade(reply, primed=primed))
        values.append(Value(float(outcome.value)) if outcome.ok else Value(None, outcome.status, outcome.reason))
    return values


