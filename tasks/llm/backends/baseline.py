"""Baseline systems that need no model, registered like models so leaderboards can place real ones against them.

``abstain`` always declines.  On MKQA it scores exactly the share of
questions without a short answer (the paper's "always no answer" floor,
32.42 F1); on judged recipes it shows what a judge gives for saying nothing.

``extractive`` answers from the documents it is shown, without a model: the
passage line sharing the most words with the question, its first sentence,
cited by the passage's id when the prompt gives one (``[docid] Title - text``)
and in MIRAGE's ``##Reason:``/``##Answer:`` form when the prompt asks for it.
Shown no documents (closed book), it declines.  It is the floor a RAG system
must beat: copying the likeliest sentence.

A baseline runs in-process, costs nothing and never fails.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tasks.errors import ConfigError
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse

DECLINE = "I don't know."
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
    return f"##Reason: {sentence}\n##Answer: {sentence}" if "##Answer:" in prompt else sentence


def _prompt_text(request: LLMRequest) -> str:
    return request.prompt if request.prompt is not None else request.messages[-1].content


#: Baseline name (a registry entry's ``model``) → how it replies to a request.
BASELINES: dict[str, Callable[[LLMRequest], str]] = {
    "abstain": lambda request: DECLINE,
    "extractive": lambda request: extractive_reply(_prompt_text(request)),
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
