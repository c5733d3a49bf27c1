"""Reading model replies: answer sections, citations and refusals, on the shapes real models write."""

from __future__ import annotations

import pytest

from tasks.inference.reading import answer_section, citations, reason_section, strip_citations
from tasks.inference.refusals import is_refusal


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
    ("I don't know. The documents do not say when the bridge opened, only who designed it.", "en", True),
    ("", "en", True),
    ("1891", "fr", False),
])
def test_refusals_in_the_question_s_language_and_in_english(reply: str, lang: str, refused: bool) -> None:
    assert is_refusal(reply, lang) is refused
