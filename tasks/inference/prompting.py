"""Which prompt an instance gets, and its request: one template per kind of setting, in the model's mode.

The setting decides what the model is shown, so it decides the template:
closed-book settings (and ECLEKTIC's hint ablations) show the question alone,
every other setting shows its documents in their presented order.  The
instance row already carries everything (question, hint, documents), so
building a benchmark and answering it stay separate stages.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.llm import LLMRequest, prompt_request
from tasks.llm.registry import ModelSpec
from tasks.text.languages import all_rules

CLOSED_BOOK = "answer_closed_book"
WITH_DOCUMENTS = "answer_with_documents"
TEMPLATES = (CLOSED_BOOK, WITH_DOCUMENTS)
#: A base model continues the pattern after its answer; one line is the answer.
COMPLETION_STOP = ("\n",)


class InferenceConfig(BaseModel):
    """How models are asked: sampling parameters and how much of each document they see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int = Field(96, ge=1, description="Tokens allowed for an answer.")
    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature (0: greedy, reproducible).")
    seed: int | None = Field(None, description="Sampling seed passed to the model; part of the call cache key.")
    doc_chars: int = Field(1500, ge=100, description="Characters of each document shown to the model.")


def language_name(lang: str) -> str:
    """The English name of a language for a prompt; the code itself for one the language table lacks."""
    rule = all_rules().get(lang)
    return rule.name if rule is not None else lang


def instance_request(spec: ModelSpec, instance: dict[str, Any], config: InferenceConfig) -> tuple[str, LLMRequest]:
    """(template, request) of one ``instances`` row (``question``, ``lang``, ``setting``, ``documents``, ``prompt_hint``)."""
    documents = json.loads(instance["documents"] or "[]")
    template = WITH_DOCUMENTS if documents else CLOSED_BOOK  # shown documents are answered from
    stop = COMPLETION_STOP if spec.mode == "completion" else None
    if template == CLOSED_BOOK:
        hint = json.loads(instance["prompt_hint"]) if instance.get("prompt_hint") else None
        if hint and hint.get("source_lang"):
            hint["source_language"] = language_name(hint["source_lang"])
        request = prompt_request(spec, template, max_tokens=config.max_tokens, stop=stop, seed=config.seed,
                                 temperature=config.temperature, question=instance["question"], hint=hint)
    else:
        shown = [{"title": d["title"], "text": (d.get("text") or "")[: config.doc_chars]} for d in documents]
        request = prompt_request(spec, template, max_tokens=config.max_tokens, stop=stop, seed=config.seed,
                                 temperature=config.temperature, question=instance["question"],
                                 language=language_name(instance["lang"]), documents=shown)
    return template, request
