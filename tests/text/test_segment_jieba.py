"""Chinese segmentation (jieba-rs where it agrees with jieba, jieba elsewhere) against jieba's own output.

Every expected value is jieba's ``Tokenizer.tokenize`` on the same text, with
the segmenter's rule for which pieces are words; the inputs mix what jieba
and jieba-rs treat differently: ASCII words, digits and punctuation inside
and beside Han runs, dictionary words with Latin letters, Han characters
outside jieba's range, kana, full-width forms, whitespace.
"""

from __future__ import annotations

import logging
import lzma
import random
from collections.abc import Iterator

import jieba
import pytest

from tasks.sample.mirror import load_content
from tasks.text.segment import _WORDLIKE, segmenter, tokenize
from tests.conftest import TEST_DATA, shared_data

EXTRAS = [*"，。、！？.-%+#&_ \n\t：；（）《》“”·…—", "\r\n", "1871", "3.14", "50%", "GDP", "iPhone",
          "www.mediawiki.org", "first-letter", "C++", "A&B", "x_y", "２０２４", "ｗｗｗ", "ア", "の", "한국", "Ж", "é",
          "\u9FD6", "\u3400", "\U00020000", "\uF900"]


@pytest.fixture(scope="module")
def reference() -> jieba.Tokenizer:
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def _differing(texts: list[str], reference: jieba.Tokenizer) -> list[str]:
    """The texts whose word spans, or words (which ``tokenize`` takes without their spans), differ from jieba's."""
    spans = segmenter("jieba", "zh")
    differing = []
    for text in texts:
        expected = [(word, start, end) for word, start, end in reference.tokenize(text) if _WORDLIKE.search(word)]
        if list(spans(text)) != [(start, end) for _, start, end in expected] \
                or tokenize(text, "zh") != [word for word, _, _ in expected]:
            differing.append(text)
    return differing


def _dictionary_texts(reference: jieba.Tokenizer, count: int, seed: int) -> Iterator[str]:
    """Strings of jieba's dictionary words, its words with Latin letters (T恤, C++, AT&T) weighted up, with
    punctuation, ASCII, digits, other scripts and unknown Han characters (the HMM's work) between them."""
    rng = random.Random(seed)
    words = [word for word, frequency in reference.FREQ.items() if frequency]
    latin = [word for word in words if any(char.isascii() for char in word)]
    assert len(latin) > 50  # the dictionary's mixed words are among the inputs

    def piece() -> str:
        roll = rng.random()
        if roll < 0.7:
            return rng.choice(words)
        if roll < 0.8:
            return rng.choice(latin)
        if roll < 0.93:
            return rng.choice(EXTRAS)
        return chr(rng.randint(0x4E00, 0x9FD5))

    for _ in range(count):
        yield "".join(piece() for _ in range(rng.randint(1, 30)))


def test_dictionary_words_with_punctuation_latin_and_digits_segment_as_jieba(reference: jieba.Tokenizer) -> None:
    assert _differing(list(_dictionary_texts(reference, 8000, seed=0)), reference) == []


def test_cjk_and_ascii_soup_segments_as_jieba(reference: jieba.Tokenizer) -> None:
    rng = random.Random(1)
    ranges = [(0x4E00, 0x9FFF), (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x200FF),
              (0x3040, 0x30FF), (0xFF00, 0xFF5F), (0x20, 0x7E), (0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)]

    def char() -> str:
        low, high = rng.choice(ranges)
        return chr(rng.randint(low, high))

    soup = ["".join(char() for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    assert _differing(soup, reference) == []


@pytest.mark.parametrize(("sample", "every"), [("excerpt", 1), ("shared", 20)])
def test_japanese_wikitext_with_kanji_segments_as_jieba(reference: jieba.Tokenizer, sample: str, every: int) -> None:
    """Real Japanese wikitext: every line of the excerpt every clone has (225,456 characters), and every 20th line
    of the whole sample in ../shared when it is there."""
    path = (TEST_DATA / "wikipedia-xml" / "jawiki-excerpt.xml.xz" if sample == "excerpt"
            else shared_data("wikipedia-xml", "jawiki-truncated-100k.xml.xz"))
    with lzma.open(path, "rt", encoding="utf-8") as xml:
        lines = xml.read().splitlines()[::every]
    assert sum(map(len, lines)) > 200_000
    assert _differing(lines, reference) == []


def test_the_bundled_samples_chinese_articles_segment_as_jieba(reference: jieba.Tokenizer) -> None:
    texts = [text for topic in load_content().topics if (article := topic.articles.get("zh"))
             for text in (article.title, article.description, *article.body.splitlines())]
    assert len(texts) > 50
    assert _differing(texts, reference) == []
