"""The rewritten ``13a`` and ``zh`` tokenizers against sacreBLEU's own, on every BMP character and varied strings."""

from __future__ import annotations

import random

import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from tasks.features.bleu_tokens import Translated13a, TranslatedZh, translated
from tasks.sample.mirror import load_content

PAIRS = [(Translated13a, Tokenizer13a), (TranslatedZh, TokenizerZh)]
# What the rules turn on: periods and commas beside digits or not, hyphens after digits, 13a's preprocessing
# (<skipped>, "-\n", line breaks, &-escapes), Unicode spaces, CJK and what TokenizerZh's ranges happen to cover.
PIECES = [*"0123456789.,-.,-.,-&;<>\"'()[]{}/\\:@!?#$%*+=^_`|~ \t\n\r", "&quot;", "&amp;", "&lt;", "&gt;",
          "&amp;quot;", "&", "<skipped>", "-\n", "\r\n", "...", "1,000.5", "3.14", "U.S.", "e.g.,", "1-2", "a-b",
          "\u3000", "\xa0", "\u2028", "\x1c", "\x85", "\u200b", "长江", "中国", "。", "，", "、", "（", "）", "２０",
          "ｗ", "ア", "の", "한국", "ΟΔΟΣ", "é", "e\u0301", "—", "…", "’", "“", "→", "☃", "㈱", "㎏", "\u9FD6",
          "\u3400", "\uF900", "\U00020000", "\U0001F600", "\ud800", "river", "The", "Straße", "1871", " "]


def _same(texts: list[str]) -> None:
    for ours, theirs in PAIRS:
        rewritten, reference = ours(), theirs()
        assert [text for text in texts if rewritten(text) != reference(text)] == [], theirs.__name__


def test_every_bmp_character_in_context_is_tokenised_as_sacrebleu_does() -> None:
    rng = random.Random(0)
    chars = [chr(code) for code in range(0x10000)]
    rng.shuffle(chars)
    texts, at = [], 0
    while at < len(chars):  # each character between letters, digits, periods, commas, hyphens and spaces
        size = rng.randint(1, 12)
        after = ["", " ", "a", "1", ".", ",", "-", "中"]
        texts.append("".join(char + rng.choice(after) for char in chars[at:at + size]))
        at += size
    _same(texts)


def test_random_strings_are_tokenised_as_sacrebleu_does() -> None:
    rng = random.Random(1)
    texts = ["".join(rng.choices(PIECES, k=rng.randint(0, 40))) for _ in range(20_000)]
    texts += ["".join(chr(rng.randint(0, 0x2FFFF)) for _ in range(rng.randint(0, 30))) for _ in range(5000)]
    _same(texts)


def test_the_bundled_samples_articles_are_tokenised_as_sacrebleu_does() -> None:
    texts = [text for topic in load_content().topics for article in topic.articles.values()
             for text in (article.title, article.description, article.body, *article.body.splitlines())]
    assert len(texts) > 500
    _same(texts)


@pytest.mark.parametrize("name", ["char", "none", "intl"])
def test_other_tokenizers_stay_sacrebleus_own(name: str) -> None:
    tokenizer = BLEU(tokenize=name).tokenizer
    assert translated(tokenizer) is tokenizer


@pytest.mark.parametrize(("name", "kind"), [("13a", Translated13a), ("zh", TranslatedZh)])
def test_13a_and_zh_are_rewritten(name: str, kind: type) -> None:
    assert isinstance(translated(BLEU(tokenize=name).tokenizer), kind)
