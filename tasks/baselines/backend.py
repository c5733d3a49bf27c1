"""Baseline systems that need no model, registered like models so leaderboards can place real ones against them.

``abstain`` always declines (MKQA's "no answer" floor); ``extractive`` copies the first sentence of the
shown passage sharing most words with the question (the floor a RAG system must beat); ``oracle`` answers
with the gold (the ceiling a scorer must reach); ``reference-judge`` gives a judge's JSON verdict by token
overlap with the gold — recall of at least :data:`RECALL_THRESHOLD` pointwise, the higher token F1 pairwise.
The last two read the gold only through :mod:`tasks.inference.gold` and fail the call without it (or
without a gold answer) rather than make a verdict up.  They are for demos and tests, not to be trusted.

See ``docs/models-and-backends.md``, "Baselines".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tasks.errors import ConfigError
from tasks.inference.gold import Gold, gold_for
from tasks.inference.reading import strip_citations
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse, PermanentLLMError
from tasks.llm.verdicts import PAIRWISE, YES_NO
from tasks.metrics.mkqa_improved import improved_tokens
from tasks.metrics.mkqa_official import token_f1

DECLINE = "I don't know."
#: The share of the gold answer's tokens an answer must hold for the reference judge's pointwise "yes".
RECALL_THRESHOLD = 0.5
_WORD = re.compile(r"\w{3,}")
_CITED_LINE = re.compile(r"^\[([^\]\s]+)\]\s*(.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")


def _words(text: str) -> set[str]:
    return {word.casefold() for word in _WORD.findall(text)}


def extractive_reply(prompt: str) -> str:
    """The first sentence of the prompt's passage line that shares the most words with its question."""
    lines = [line.strip() for line in prompt.splitlines() if line.strip()]
    question = next((line[len("Question:"):].strip() for line in lines if line.startswith("Question:")), "")
    asked = _words(question)
    candidates = [line for line in lines if not line.startswith(("Question:", "Answer", "##", "Passages:"))
                  and not line.endswith(":") and line != question]
    scored = [(len(asked & _words(line)), -n, line) for n, line in enumerate(candidates)]
    best = max(scored, default=(0, 0, ""))
    if best[0] == 0:
        return DECLINE
    cited = _CITED_LINE.match(best[2])
    body = cited.group(2).split(" - ", 1)[-1] if cited else best[2]
    sentence = _SENTENCE_END.split(body, maxsplit=1)[0].strip()
    if cited:
        sentence = f"{sentence} [{cited.group(1)}]"
    return _as_asked(sentence, prompt)


def _as_asked(answer: str, prompt: str) -> str:
    """``answer`` in MIRAGE's ``##Reason:``/``##Answer:`` form when the prompt asks for it, else as it is (XRAG's
    ``<answer>`` tag is left out: its readers take an untagged reply whole)."""
    return f"##Reason: {answer}\n##Answer: {answer}" if "##Answer:" in prompt else answer


def _prompt_text(request: LLMRequest) -> str:
    return request.prompt if request.prompt is not None else request.messages[-1].content


def _gold(request: LLMRequest, baseline: str) -> Gold:
    gold = gold_for(request)
    if gold is None:
        raise PermanentLLMError(f"the {baseline} baseline answers only requests about benchmark instances, whose"
                                " gold the inference, judging and arena stages hand it; this request came with none")
    return gold


def oracle_reply(request: LLMRequest) -> str:
    """The gold answer, citing the gold passages by the ids the prompt gives them; a decline where there is none."""
    gold = _gold(request, "oracle")
    if not gold.answers:
        return DECLINE
    cited = f" [{', '.join(gold.support)}]" if gold.support else ""
    return _as_asked(gold.answers[0] + cited, _prompt_text(request))


def _tokens(answer: str, lang: str) -> tuple[str, ...]:
    return improved_tokens(strip_citations(answer), lang)


def gold_recall(answer: str, gold: Gold) -> float:
    """The largest share of one gold answer's tokens that ``answer`` holds (0 without gold answers)."""
    said = set(_tokens(answer, gold.lang))
    return max((sum(token in said for token in expected) / len(expected)
                for expected in (_tokens(text, gold.lang) for text in gold.answers) if expected), default=0.0)


def gold_f1(answer: str, gold: Gold) -> float:
    """The best token F1 of ``answer`` against the gold answers (0 without gold answers)."""
    said = _tokens(answer, gold.lang)
    return max((token_f1(said, _tokens(text, gold.lang)) for text in gold.answers), default=0.0)


def reference_verdict(request: LLMRequest) -> str:
    """A judge's JSON verdict by token overlap with the gold (see the module notes), of the form the request asks."""
    gold, wanted = _gold(request, "reference-judge"), request.response_format
    if not gold.answers:
        raise PermanentLLMError("reference-judge: this instance has no gold answer to compare with")
    if wanted == PAIRWISE:
        if len(gold.judged) != 2:
            raise PermanentLLMError(f"reference-judge: a pairwise verdict needs two answers, got {len(gold.judged)}")
        first, second = (gold_f1(answer, gold) for answer in gold.judged)
        winner = "A" if first > second else "B" if second > first else "tie"
        return json.dumps({"reason": f"Token F1 against the reference answer: A {first:.2f}, B {second:.2f}.",
                           "winner": winner})
    if wanted == YES_NO:
        if len(gold.judged) != 1:
            raise PermanentLLMError(f"reference-judge: a pointwise verdict needs one answer, got {len(gold.judged)}")
        recall = gold_recall(gold.judged[0], gold)
        return json.dumps({"justification": f"The answer holds {recall:.0%} of the reference answer's words (at least"
                                            f" {RECALL_THRESHOLD:.0%} needed).",
                           "verdict": "yes" if recall >= RECALL_THRESHOLD else "no"})
    raise PermanentLLMError("reference-judge answers only judges' verdict requests (a pointwise or pairwise JSON"
                            " verdict); this request asks for something else")


#: Baseline name (a registry entry's ``model``) → how it replies to a request.
BASELINES: dict[str, Callable[[LLMRequest], str]] = {
    "abstain": lambda request: DECLINE,
    "extractive": lambda request: extractive_reply(_prompt_text(request)),
    "oracle": oracle_reply,
    "reference-judge": reference_verdict,
}


class BaselineBackend:
    def __init__(self, spec: ModelSpec) -> None:
        if spec.model not in BASELINES:
            raise ConfigError(f"model {spec.name!r}: no baseline {spec.model!r} (baselines: {', '.join(BASELINES)})")
        self.reply = BASELINES[spec.model]

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(self.reply(request), 0, 0, "stop", 0.0, {"baseline": True})

    async def aclose(self) -> None:
        """Nothing to release."""
