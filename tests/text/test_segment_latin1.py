"""Latin-1 text takes a faster word pattern: the same words as the Unicode one, lower-cased ones included."""

from __future__ import annotations

import random

from tasks.text.segment import _WORD, lowered_words, tokenize

# every Latin-1 character, weighted towards what joins or ends words: letters, digits, apostrophes, points, commas
PIECES = ([chr(c) for c in range(256)] + list("aZ09'.,") * 40 + [" "] * 80
          + ["ß", "Ä", "µ", "²", "½", "ª", "\xa0"] * 10)


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(0, 60))) for _ in range(count)]


def test_latin1_words_are_the_unicode_patterns_words() -> None:
    texts = _texts(30_000, 1) + ["L'université de Genève, fondée en 1559.", "Größe 3.14 und 1,000 Äpfel",
                                 "½ ² µm"]
    for text in texts:
        assert tokenize(text, "de") == _WORD.findall(text), text
        assert lowered_words(text, "fr") == [word.lower() for word in _WORD.findall(text)], text


def test_text_beyond_latin1_still_takes_the_unicode_pattern() -> None:
    # a curly apostrophe and a combining mark join words only in the Unicode pattern
    assert tokenize("l’homme café\u0301s", "fr") == ["l’homme", "café\u0301s"]
    assert lowered_words("ΟΔΟΣ Ab", "en") == ["οδος", "ab"]
