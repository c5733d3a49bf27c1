"""Abstentions are whole answers: the fixed "None" and plain "I don't know"s, never a phrase inside an answer."""

from __future__ import annotations

import pytest

from tasks.inference.refusals import ABSTENTION, is_refusal


@pytest.mark.parametrize("answer, lang", [
    ("Non solo Roma, ma anche Milano.", "it"),  # holds Italian "non so"
    ("他不知道这件事，所以没有参加。", "zh_cn"),  # "he did not know about it, so he did not take part": holds 不知道
    ("原因不清楚。", "zh_cn"),  # "the cause is unclear": holds 不清楚, and answers a question about what is known
    ("No answer was given by the ministry", "en"),  # holds "no answer"
    ("The Unknown Soldier", "en"),
    ("None of the three bridges survived the war.", "en"),  # holds the fixed answer
    ("I don't know why critics disliked it, but the bridge opened in 1871.", "en"),
    ("I don't know. The documents only say who designed the bridge.", "en"),  # a decline the judge reads
    ("Keine Ahnung von Musik (1951)", "de"),  # a title holding "keine ahnung"
    ("1891", "fr"),
])
def test_an_answer_holding_a_refusal_phrase_is_an_answer(answer: str, lang: str) -> None:
    assert is_refusal(answer, lang) is False


@pytest.mark.parametrize("answer", ["None", "none", "NONE", "None.", " None! ", "**None**", "`None`", "“None”",
                                    "(None)", "«None»", "None\n"])
@pytest.mark.parametrize("lang", ["en", "de", "zh_cn", "ja", "xx"])
def test_the_fixed_abstention_answer_abstains_in_every_language_whatever_surrounds_it(answer: str, lang: str) -> None:
    assert ABSTENTION == "None"  # the answer the MKQA and XRAG no-retrieval prompts ask for
    assert is_refusal(answer, lang) is True


@pytest.mark.parametrize("answer, lang", [
    ("I don't know.", "en"),
    ("I DON’T KNOW!", "en"),  # upper case, a typographic apostrophe
    ("i   do not   know", "en"),  # spaces collapse
    ("N/A", "en"),
    ("Unknown.", "en"),
    ("Ich weiß es nicht.", "de"),
    ("ICH WEISS ES NICHT", "de"),  # ß case-folds to ss
    ("«Je ne sais pas»", "fr"),
    ("¿No lo sé?", "es"),
    ("わかりません。", "ja"),
    ("「不明」", "ja"),
    ("不清楚。", "zh_tw"),
    ("我不知道！", "zh_cn"),
    ("모르겠습니다.", "ko"),
    ("لا أعرف", "ar"),
    ("I don't know.", "ja"),  # an English decline to a Japanese question
    ("", "en"),
    (None, "en"),
    ("—", "en"),  # nothing but punctuation: empty
])
def test_a_whole_decline_abstains_with_any_case_and_punctuation_around_it(answer: str | None, lang: str) -> None:
    assert is_refusal(answer, lang) is True


def test_a_phrase_counts_in_its_language_and_english_only() -> None:
    # "non so" is Italian; to a German question it is not one of the phrases read (German's and English's)
    assert (is_refusal("Non so.", "it"), is_refusal("Non so.", "de")) == (True, False)
    # a language without a list: English only
    assert (is_refusal("Je ne sais pas.", "xx"), is_refusal("I do not know.", "xx")) == (False, True)
