"""Baseline systems that need no model, registered like models so leaderboards can place real ones against them.

``abstain`` always declines.  On MKQA it scores exactly the share of
questions without a short answer (the paper's "always no answer" floor,
32.42 F1); on judged recipes it shows what a judge gives for saying nothing.
A baseline runs in-process, costs nothing and never fails.
"""

from __future__ import annotations

from tasks.errors import ConfigError
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse

#: Baseline name (a registry entry's ``model``) → its fixed reply.
REPLIES = {"abstain": "I don't know."}


class BaselineBackend:
    def __init__(self, spec: ModelSpec) -> None:
        if spec.model not in REPLIES:
            raise ConfigError(f"model {spec.name!r}: no baseline {spec.model!r} (baselines: {', '.join(REPLIES)})")
        self.reply = REPLIES[spec.model]

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(self.reply, 0, 0, "stop", 0.0, {"baseline": True})

    async def aclose(self) -> None:
        """Nothing to release."""
