"""The model-free baselines: abstain declines; extractive copies the likeliest sentence from the shown passages."""

from __future__ import annotations

import asyncio

from tasks.inference.prompting import InferenceConfig, instance_request
from tasks.inference.reading import answer_section, citations
from tasks.llm import ModelSpec
from tasks.llm.backends.baseline import BaselineBackend

EXTRACTIVE = ModelSpec(name="extractive", backend="baseline", model="extractive", mode="chat")
DOCUMENTS = ('[{"doc_id": "36897421#2", "title": "Velna", "role": "support",'
             ' "text": "The Velna rises in the Kelda hills. It is 212 km long."},'
             ' {"doc_id": "555#0", "title": "Tarsk", "role": "distractor", "text": "Tarsk is a town on the coast."}]')


def _reply(instance: dict) -> str:
    _, request = instance_request(EXTRACTIVE, instance, InferenceConfig())
    return asyncio.run(BaselineBackend(EXTRACTIVE).complete(request)).text


def test_on_a_mirage_prompt_it_cites_the_passage_sharing_most_words_with_the_question() -> None:
    reply = _reply({"recipe": "mirage", "question": "Where does the Velna rise?", "lang": "en",
                    "documents": DOCUMENTS, "prompt_hint": None})
    # the Velna passage shares "the" and "velna" with the question, the Tarsk one only "the": its first sentence, cited
    assert answer_section(reply) == "The Velna rises in the Kelda hills. [36897421#2]"
    assert citations(reply) == ["36897421#2"] and reply.startswith("##Reason:")


def test_with_plain_documents_it_answers_the_sentence_alone_and_closed_book_it_declines() -> None:
    documents = '[{"lang": "en", "page_id": 7, "title": "Tarsk", "text": "Tarsk is a town on the coast. It has a port."}]'
    assert _reply({"recipe": "xrag", "question": "Which town lies on the coast?", "lang": "en",
                   "documents": documents, "prompt_hint": None}) == "Tarsk is a town on the coast."
    assert _reply({"recipe": "mkqa", "question": "Who wrote it?", "lang": "en", "documents": "[]",
                   "prompt_hint": None}) == "I don't know."
