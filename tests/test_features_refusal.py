"""The refusal check's one-pattern screen decides as the phrase-by-phrase reading does, on varied answers."""

from __future__ import annotations

import random

import pytest

from tasks.inference.refusals import PHRASES, SHORT_ANSWER_CHARS, START_WINDOW, UNKNOWN, _family, _normal, is_refusal


def _phrase_by_phrase(text: str | None, lang: str) -> bool:
    """The rule as the module notes state it: each phrase's first occurrence, anywhere in a short answer, or
    within the window of a long one when its clause ends there."""
    normal = _normal(text or "")
    if not normal or normal.strip(" .!。！") in UNKNOWN:
        return True
    short = len(normal) <= SHORT_ANSWER_CHARS
    for phrase in PHRASES.get(_family(lang), ()) + PHRASES["en"]:
        at = normal.find(phrase)
        if at == -1:
            continue
        after = normal[at + len(phrase):at + len(phrase) + 1]
        if short or (at <= START_WINDOW and (not after or after in ".,;:!?。，、！？")):
            return True
    return False


@pytest.mark.parametrize("lang", ["en", "de", "zh_cn", "ja", "xx"])
def test_the_screen_decides_as_each_phrase_would(lang: str) -> None:
    rng = random.Random(lang)
    phrases = [phrase.upper() if rng.random() < 0.3 else phrase for phrase in PHRASES.get(_family(lang), ())
               + PHRASES["en"]]
    pieces = [*phrases, *UNKNOWN, "I don’t know", "the bridge", "opened in 1871", "x", "长江", " ", " ", ".", ",",
              "!", "。", "?", "-", "\u00a0", "ﬁ", "Ⅻ", "", "why critics disliked it"]
    texts = [None, ""]
    for _ in range(20_000):  # lengths around the short answer's limit, phrases around the end of the window
        texts.append("".join(rng.choices(pieces, k=rng.randint(1, 14))))
    decided = [is_refusal(text, lang) for text in texts]
    assert decided == [_phrase_by_phrase(text, lang) for text in texts]
    assert 0.1 < sum(decided) / len(decided) < 0.9  # both outcomes are well represented
