"""Which prompt an instance gets, and its request: the template its recipe names, in the model's mode.

The recipe and the setting decide what the model is shown, so they decide
the template (:meth:`~tasks.recipe.Recipe.template`): the core's templates
are closed book (the question alone — with a request for the fixed
abstention answer, :data:`~tasks.inference.refusals.ABSTENTION`, where the
recipe's protocol lets a model abstain), the question with its documents in
their presented order, XRAG's (its articles with their dates, an answer
from them alone inside ``<answer>…</answer>``) and MIRAGE's (passages as
``[docid] Title - text``, a cited ``##Reason:`` and an ``##Answer:``); a
recipe of another package may bring its own (``<recipe>:<name>``).  The
instance row already carries everything (question, hint, documents), so
building a benchmark and answering it stay separate stages.

Sampling defaults are the recipe's (:class:`~tasks.recipe.Sampling`:
MIRAGE's follow its protocol); a value set in :class:`InferenceConfig`
overrides them for every recipe.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.inference.refusals import ABSTENTION
from tasks.llm import LLMRequest, prompt_request
from tasks.llm.registry import ModelSpec
from tasks.recipe import Sampling
from tasks.recipe import recipe as recipe_of
from tasks.text.languages import all_rules

CLOSED_BOOK = "answer_closed_book"
WITH_DOCUMENTS = "answer_with_documents"
XRAG = "answer_xrag"
MIRAGE = "answer_mirage"
TEMPLATES = (CLOSED_BOOK, WITH_DOCUMENTS, XRAG, MIRAGE)
#: A base model continues the pattern after its answer; one line is the answer (a reasoned one ends at a blank
#: line, a tagged one at its closing tag).
COMPLETION_STOP = {CLOSED_BOOK: ("\n",), WITH_DOCUMENTS: ("\n",), XRAG: ("</answer>", "\n"), MIRAGE: ("\n\n",)}


class InferenceConfig(BaseModel):
    """How models are asked: sampling parameters and how much of each document they see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(None, ge=1, description="Tokens allowed for an answer (default: the recipe's;"
                                   " 96, or 512 for MIRAGE's reasoned answers).")
    temperature: float | None = Field(None, ge=0.0, description="Sampling temperature (default: the recipe's;"
                                      " 0 — greedy, reproducible — or MIRAGE's 0.1).")
    seed: int | None = Field(None, description="Sampling seed passed to the model; part of the call cache key.")
    doc_chars: int | None = Field(None, ge=100, description="Characters of each document shown to the model"
                                  " (default: the recipe's; 1500, or about 800 tokens for MIRAGE).")

    def sampling(self, recipe: str) -> Sampling:
        """The recipe's defaults with this configuration's values over them."""
        return replace(recipe_of(recipe).sampling, **{name: value for name, value in self.model_dump().items()
                                                      if value is not None and name in Sampling.__dataclass_fields__})


def language_name(lang: str) -> str:
    """The English name of a language for a prompt; the code itself for one the language table lacks."""
    rule = all_rules().get(lang)
    return rule.name if rule is not None else lang


def instance_request(spec: ModelSpec, instance: dict[str, Any], config: InferenceConfig) -> tuple[str, LLMRequest]:
    """(template, request) of one ``instances`` row (``recipe``, ``question``, ``lang``, ``setting``, ``documents``,
    ``prompt_hint``)."""
    documents = json.loads(instance["documents"] or "[]")
    protocol = recipe_of(instance["recipe"])
    sampling = config.sampling(instance["recipe"])
    template = protocol.template(instance["setting"], bool(documents))
    common = {"max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "seed": config.seed,
              "stop": COMPLETION_STOP.get(template, ("\n",)) if spec.mode == "completion" else None,
              "question": instance["question"], "abstention": ABSTENTION if protocol.abstains else None,
              "extra": json.loads(instance["extra"]) if instance.get("extra") else None}
    if template == CLOSED_BOOK:
        hint = json.loads(instance["prompt_hint"]) if instance.get("prompt_hint") else None
        if hint and hint.get("source_lang"):
            hint["source_language"] = language_name(hint["source_lang"])
        return template, prompt_request(spec, template, **common, hint=hint)
    return template, prompt_request(spec, template, **common, language=language_name(instance["lang"]),
                                    documents=shown_documents(documents, sampling))


def shown_documents(documents: list[dict[str, Any]], sampling: Sampling) -> list[dict[str, str]]:
    """Each document's id, title, date (its ``date``, "" when it has none) and text cut to the recipe's length,
    until the total allowance is spent."""
    shown, left = [], sampling.total_chars
    for document in documents:
        text = (document.get("text") or "")[: sampling.doc_chars]
        if left is not None:
            text, left = text[: max(left, 0)], left - len(text)
        shown.append({"id": document_id(document), "title": document.get("title") or "",
                      "date": str(document.get("date") or ""), "text": text})
    return shown


def document_id(document: dict[str, Any]) -> str:
    """How a prompt names a document: its published id (MIRACL ``36897421#2``), else ``<lang>:<page_id>``."""
    if document.get("doc_id"):
        return str(document["doc_id"])
    return f"{document.get('lang', '')}:{document.get('page_id', '')}"
