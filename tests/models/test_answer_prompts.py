"""The answer prompts each recipe's protocol asks for: where a model may abstain, and how it is told to."""

from __future__ import annotations

import json

import pytest

from tasks.inference.prompting import InferenceConfig, instance_request
from tasks.inference.refusals import ABSTENTION, is_refusal
from tasks.llm import ModelSpec

CHAT = ModelSpec(name="chat", backend="openai", model="m", mode="chat", base_url="http://127.0.0.1:9/v1")
BASE = ModelSpec(name="base", backend="openai", model="m", mode="completion", base_url="http://127.0.0.1:9/v1")
ARTICLES = json.dumps([{"doc_id": "q1-0", "title": "Velna Bridge", "date": "2024-06-03", "text": "It opened in 1871."}])


def _prompt(spec: ModelSpec, recipe: str, documents: str = "[]") -> tuple[str, str, tuple[str, ...] | None]:
    template, request = instance_request(spec, {"recipe": recipe, "question": "who designed the velna bridge",
                                                "lang": "en", "setting": "s", "documents": documents,
                                                "prompt_hint": None}, InferenceConfig())
    return template, request.prompt if request.prompt is not None else request.messages[-1].content, request.stop


def test_mkqa_asks_for_the_fixed_abstention_answer_which_is_then_read_as_an_abstention() -> None:
    template, prompt, _ = _prompt(CHAT, "mkqa")
    assert template == "answer_closed_book"
    assert prompt == ("Answer the question below briefly. If you do not know the answer, reply with the single word"
                      " None.\nwho designed the velna bridge")
    assert is_refusal(ABSTENTION, "en") and is_refusal(f"{ABSTENTION}.", "fr")
    _, base, stop = _prompt(BASE, "mkqa")  # a base model: the same request, then the open question/answer slot
    assert base.endswith("single word None.\nQuestion: who designed the velna bridge\nAnswer:") and stop == ("\n",)


def test_eclektic_keeps_the_bare_question_with_no_way_out() -> None:
    assert _prompt(CHAT, "eclektic")[1] == "who designed the velna bridge"
    assert _prompt(BASE, "eclektic")[1] == "Question: who designed the velna bridge\nAnswer:"


@pytest.mark.parametrize("spec", [CHAT, BASE])
def test_xrag_offers_none_without_retrieval_only(spec: ModelSpec) -> None:
    template, closed, _ = _prompt(spec, "xrag")
    _, retrieval, stop = _prompt(spec, "xrag", ARTICLES)
    assert template == "answer_xrag"
    assert "write None as the whole answer" in closed and "from what you know" in closed
    assert "None" not in retrieval and "Use only what the articles say" in retrieval
    assert "Article 1 — Velna Bridge (2024-06-03):\nIt opened in 1871." in retrieval
    assert all("between <answer> and </answer>" in prompt for prompt in (closed, retrieval))
    if spec is BASE:  # a base model gets the plain slot; a tag it writes is closed by the stop sequence
        assert retrieval.endswith("Answer:") and stop == ("</answer>", "\n")
