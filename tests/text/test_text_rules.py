"""Language rules, segmentation, sentence splitting and truncation on hand-picked text."""

from __future__ import annotations

import importlib

import pytest

from tasks.text.languages import all_rules, rule_for
from tasks.text.segment import token_spans, tokenize
from tasks.text.sentences import split_sentences
from tasks.text.truncate import truncate

REQUIRED = {"en", "de", "fr", "es", "it", "pt", "ru", "uk", "el", "bn", "hi", "ar", "he", "id", "ko", "ja", "zh", "th"}
UNSPACED = {"zh", "ja", "th"}
SEGMENTER_MODULES = {"jieba": "jieba", "fugashi": "fugashi", "icu": "icu"}


def test_every_row_loads_with_the_rule_for_its_script() -> None:
    rules = all_rules()
    assert REQUIRED <= set(rules)
    for lang, rule in rules.items():
        assert rule.analyzer and rule.disambiguation_markers
        expected = ("chars", 600) if rule.needs_segmentation else ("tokens", 200)
        assert (rule.truncate_unit, rule.truncate_limit) == expected, lang
    for lang in REQUIRED:
        assert rule_for(lang).wiki == f"{lang}wiki"
        assert rule_for(lang).needs_segmentation == (lang in UNSPACED), lang
    assert (rule_for("zh").segmenter, rule_for("ja").segmenter, rule_for("th").segmenter) == ("jieba", "fugashi", "icu")


@pytest.mark.parametrize("segmenter", sorted({rule.segmenter for rule in all_rules().values()} - {"whitespace"}))
def test_every_segmenter_named_in_the_rules_is_importable(segmenter: str) -> None:
    importlib.import_module(SEGMENTER_MODULES[segmenter])


def test_chinese_words() -> None:
    assert tokenize("我爱北京天安门。", "zh") == ["我", "爱", "北京", "天安门"]


def test_japanese_words() -> None:
    tokens = tokenize("東京都に住んでいます。", "ja")
    # UniDic short units: the place name, the particle and the polite ending stand alone.
    assert tokens[:3] == ["東京", "都", "に"]
    assert tokens[-1] == "ます"
    assert "".join(tokens) == "東京都に住んでいます"  # every character but the full stop is in a word


def test_thai_words() -> None:
    # ICU's dictionary splits the compound ภาษาไทย, "the Thai language", into ภาษา "language" and ไทย "Thai".
    assert tokenize("ผมรักภาษาไทย", "th") == ["ผม", "รัก", "ภาษา", "ไทย"]


def test_space_separated_words_keep_marks_apostrophes_and_numbers() -> None:
    assert tokenize("Don't split 3.14, but do split well-known words.", "en") == [
        "Don't", "split", "3.14", "but", "do", "split", "well", "known", "words",
    ]
    assert tokenize("हिन्दी भाषा, सुंदर है।", "hi") == ["हिन्दी", "भाषा", "सुंदर", "है"]


def test_sentences_english_with_abbreviations() -> None:
    text = 'Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. He asked, e.g. about maps! "Really?" Yes... it was.'
    assert split_sentences(text, "en") == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.",
        "He asked, e.g. about maps!",
        '"Really?"',
        "Yes... it was.",
    ]


def test_sentences_chinese_and_japanese_split_without_spaces() -> None:
    assert split_sentences("我爱北京。你呢？“好！”谢谢", "zh") == ["我爱北京。", "你呢？", "“好！”", "谢谢"]
    assert split_sentences("今日は晴れです。明日は雨！？そうですか", "ja") == ["今日は晴れです。", "明日は雨！？", "そうですか"]


def test_sentences_hindi() -> None:  # more scripts in test_segmentation_scripts.py
    assert split_sentences("यह पहला वाक्य है। क्या यह दूसरा है? हाँ।", "hi") == ["यह पहला वाक्य है।", "क्या यह दूसरा है?", "हाँ।"]


def test_line_breaks_end_sentences() -> None:
    assert split_sentences("History\nIt began. It ended.", "en") == ["History", "It began.", "It ended."]


def test_japanese_truncates_at_600_characters() -> None:
    text = "あ" * 550 + "、" + "い" * 149  # 700 characters
    assert truncate(text, "ja") == "あ" * 550 + "、" + "い" * 49


def test_english_truncates_after_the_200th_token_keeping_original_spacing() -> None:
    # 250 words "w1." … "w250."; the 200th token is "w200", so the cut drops its full stop.
    words = [f"w{i}." for i in range(1, 251)]
    text = "  ".join(words)
    assert truncate(text, "en") == "  ".join(words[:199]) + "  w200"
    assert truncate("  ".join(words[:200]), "en") == "  ".join(words[:200])  # 200 tokens: nothing to cut


def test_truncation_fast_path_cuts_exactly_where_the_word_spans_say() -> None:
    """The one-regex cut for space-separated scripts agrees with counting token spans one by one."""
    import random
    from itertools import islice

    from tasks.text.segment import token_spans
    from tasks.text.truncate import truncate

    def by_spans(text: str, lang: str, limit: int = 200) -> str:
        spans = list(islice(token_spans(text, lang), limit + 1))
        return text if len(spans) <= limit else text[: spans[limit - 1][1]]

    rng = random.Random(7)
    pieces = ["l'homme", "3.14", "1,000", "don’t", "नमस्ते", "दुनिया", "Straße", "—", ",", ". ", "  ", "x", "42",
              "'quoted'", "a.b", "\n", "গান", "Αθήνα"]
    for _ in range(400):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 260)))
        for lang in ("en", "hi", "el"):
            assert truncate(text, lang) == by_spans(text, lang)


@pytest.mark.parametrize("lang", ["en", "fr", "hi", "ar", "ru", "hy"])
def test_tokenize_gives_the_words_its_spans_give(lang: str) -> None:
    # tokenize takes findall for spaced scripts; token_spans walks matches: the two must agree word for word
    text = "Don't split 3.14 or 1,000, but l’homme, well-known हिन्दी (भाषा) «قال» Москва‑река Երևան... x"
    assert tokenize(text, lang) == [text[start:end] for start, end in token_spans(text, lang)]
