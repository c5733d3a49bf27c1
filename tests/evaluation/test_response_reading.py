"""Reading model replies: answer sections and tags, reasons, citations, echoes of the template and refusals, on the
shapes real models write."""

from __future__ import annotations

import json

import pytest

from tasks.inference.prompting import TEMPLATES, InferenceConfig, instance_request
from tasks.inference.reading import answer_section, citations, own_reply, reason_section, strip_citations
from tasks.inference.refusals import is_refusal
from tasks.inference.respond import read_answer
from tasks.llm import ModelSpec


@pytest.mark.parametrize("reply, answer", [
    ("##Reason: The bridge opened in 1891 [41080#0]. ##Answer: 1891", "1891"),
    ("## Reason\nIt says so [41080#0].\n\n## Answer\nIn 1891.", "In 1891."),
    ("**Reasoning:** the text [a] says it.\n**Answer:** Petra Voss", "Petra Voss"),
    ("Answer: 412 km", "412 km"),
    ("  It opened in 1891.  ", "It opened in 1891."),  # no marker: the whole reply
    ("I cannot answer\nthis question from the documents.", "I cannot answer\nthis question from the documents."),
    ("Reason: see [1].\nAnswer:\n**Maren Tolk**", "Maren Tolk"),
])
def test_the_answer_section_with_or_without_its_marker(reply: str, answer: str) -> None:
    assert answer_section(reply) == answer


def test_the_reason_section_ends_at_the_answer_marker() -> None:
    assert reason_section("##Reason: first [1]. second [2]. ##Answer: x") == "first [1]. second [2]."
    assert reason_section("just an answer") is None


def test_citations_in_every_form_in_order_of_first_appearance() -> None:
    reply = ("The Velna is long [36897421#2]. Its source [en:41030, en:41020] and mouth [doc3][doc4; doc5]; "
             "again [36897421#2]. See [the article](https://x.org), [[A]] and [citation needed].")
    assert citations(reply) == ["36897421#2", "en:41030", "en:41020", "doc3", "doc4", "doc5"]
    assert citations(reply, known={"doc3", "36897421#2"}) == ["36897421#2", "doc3"]  # unknown ids dropped
    assert strip_citations("It is long [1, 2]. Very [3].") == "It is long . Very ."


@pytest.mark.parametrize("reply, lang, refused", [
    ("I don't know.", "en", True),
    ("Ich weiß es nicht.", "de", True),
    ("Ich weiß nicht.", "de", True),
    ("Je ne sais pas.", "fr", True),
    ("No lo sé.", "es", True),
    ("わかりません。", "ja", True),
    ("我不知道。", "zh_cn", True),
    ("모르겠습니다.", "ko", True),
    ("لا أعرف", "ar", True),
    ("I don't know.", "ja", True),  # an English refusal to a Japanese question
    ("Unknown.", "en", True),
    ("The Unknown Soldier", "en", False),
    ("I don't know why critics disliked it, but the bridge opened in 1891 after years of work by many", "en", False),
    # a decline followed by more is no longer a whole-answer abstention: the judge, which sees the question, reads it
    ("I don't know. The documents do not say when the bridge opened, only who designed it.", "en", False),
    ("", "en", True),
    ("1891", "fr", False),
])
def test_refusals_in_the_question_s_language_and_in_english(reply: str, lang: str, refused: bool) -> None:
    assert is_refusal(reply, lang) is refused


@pytest.mark.parametrize("reply, answer", [
    ("<answer>Sie wurde 1871 eröffnet.</answer>", "Sie wurde 1871 eröffnet."),
    ("Both articles give the year.\n\n**Answer:** <answer>1871</answer>", "1871"),
    ("The year is in article 2. <ANSWER> 1871 </ANSWER> (from article 2)", "1871"),  # what follows the tag is not it
    ("Reasoning first. <answer>It opened in 1871.", "It opened in 1871."),  # a stop sequence took the closing tag
    ("It opened in 1871.</answer>", "It opened in 1871."),  # the prompt opened the tag (a base model's reply)
    ("<answer>1868</answer> was wrong; <answer>1871</answer>", "1871"),  # the last tag, as the last marker
])
def test_the_answer_tag_s_content_is_the_answer(reply: str, answer: str) -> None:
    assert answer_section(reply) == answer


def test_a_completion_reply_ends_where_it_repeats_the_template_and_a_chat_reply_is_read_whole() -> None:
    # a base model running on into a question of its own
    assert answer_section("1871\nQuestion: When did the Pellow Tunnel open?\nAnswer: 1868", primed=True) == "1871"
    # a chat model restating the question before its answer
    assert answer_section("Question: When did the Velna Bridge open?\nAnswer: 1871") == "1871"
    assert own_reply("It opened in 1871 [a#1].\nPassages:\n[b#2] Pellow - opened 1868", primed=True) \
        == "It opened in 1871 [a#1]."
    assert own_reply("1871\nArticle 2 — Pellow Tunnel (2024-06-09):\nThe tunnel opened in 1868.", primed=True) == "1871"
    # the words alone are no echo: a document named in the reply, a question in the reasoning
    reply = "Document 2 gives the year, and the question asks for it: 1871\nArticle 5 of the charter agrees."
    assert own_reply(reply, primed=True) == reply


def test_a_completion_reply_that_only_repeats_the_template_holds_no_answer() -> None:
    parsed = read_answer("Question: When did the Pellow Tunnel open?\nAnswer: 1868", primed=True)
    assert (parsed.status, parsed.reason) == ("parse_failed", "the reply only repeats the prompt")
    assert read_answer("   ", primed=True).reason == "the reply holds no answer"
    assert read_answer("1871\nQuestion: When?", primed=True).value == "1871"


def test_a_reply_to_a_prompt_that_opened_the_reason_section_is_the_reason() -> None:
    # MIRAGE's template for a completion model ends with "##Reason:": the reply starts inside the section
    reply = "The Velna rises in the Kelda hills [36897421#2]. ##Answer: In the Kelda hills [36897421#2]"
    assert reason_section(reply) is None  # unprimed, there is no reason marker
    assert reason_section(reply, primed=True) == "The Velna rises in the Kelda hills [36897421#2]."
    assert answer_section(reply, primed=True) == "In the Kelda hills [36897421#2]"
    # a model that writes the marker again, and one that runs on into the passages
    assert reason_section("\n##Reason: It rises there [a]. ##Answer: there", primed=True) == "It rises there [a]."
    assert reason_section("It rises there [a].\nQuestion: Where does the Mirra rise?\nPassages:\n[b] Mirra - x",
                          primed=True) == "It rises there [a]."
    assert reason_section("Question: Where does the Mirra rise?", primed=True) == ""


def _completion_prompts() -> list[tuple[str, str]]:
    """(template, prompt) for every answer template and variant, as a completion model is sent it."""
    spec = ModelSpec(name="base", backend="openai", model="m", mode="completion", base_url="http://127.0.0.1:9/v1")
    documents = json.dumps([{"doc_id": "a#1", "title": "Velna", "date": "2024-06-03", "text": "It opened in 1871."}])
    hints = [None, {"kind": "general"}, {"kind": "source_lang", "source_lang": "de"},
             {"kind": "source_title", "source_lang": "de", "title": "Velna"}]
    instances = [{"recipe": "eclektic", "documents": "[]", "prompt_hint": json.dumps(hint) if hint else None}
                 for hint in hints]
    instances += [{"recipe": "eclektic", "documents": documents}, {"recipe": "mkqa", "documents": "[]"},
                  {"recipe": "xrag", "documents": "[]"}, {"recipe": "xrag", "documents": documents},
                  {"recipe": "mirage", "documents": documents}]
    prompts = []
    for instance in instances:
        template, request = instance_request(spec, {"question": "When did it open?", "lang": "en", "setting": "s",
                                                    "prompt_hint": None} | instance, InferenceConfig())
        prompts.append((template, request.prompt))
    return prompts


def test_every_answer_template_s_prompt_is_recognised_when_a_completion_model_repeats_it() -> None:
    prompts = _completion_prompts()
    assert {template for template, _ in prompts} == set(TEMPLATES)  # every template, and its variants
    for template, prompt in prompts:
        assert answer_section(f" 1871\n{prompt}", primed=True) == "1871", template
