"""Does a document state the gold answer in so many words? Answer normalisation and containment.

A distractor must not hand the model the answer.  Both sides are normalised alike (NFKC, ASCII digits, no
thousands separators, one decimal mark, case folded, punctuation as spaces, no spaces in unspaced scripts);
containment is a substring test that never matches a number inside a longer number, and a short answer in
a spaced script only as a whole token.  Paraphrases are left to the optional model check.

See ``docs/qa-build.md``, "Instances and distractors".
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

from tasks.text.languages import rule_for

SHORT_ANSWER_CHARS = 3
"""Answers up to this many normalised characters must match as whole tokens (spaced scripts)."""

_GROUPED_NUMBER = re.compile(r"(?<![\d.,])([1-9]\d{0,2})([,.' \u2019\u066c])(\d{3}(?:\2\d{3})*)(?!\d)")


@lru_cache(maxsize=1)
def _ascii_digits() -> dict[int, str]:
    """Every Unicode decimal digit (category Nd) → its ASCII digit."""
    table = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) == "Nd":
            table[code] = str(unicodedata.digit(char))
    return table


@lru_cache(maxsize=1)
def _punctuation() -> re.Pattern[str]:
    """One character of Unicode category P (Python's ``re`` has no ``\\p{P}``)."""
    chars = (chr(code) for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)).startswith("P"))
    return re.compile("[" + "".join(map(re.escape, chars)) + "]")


def _strip_punctuation(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        at = match.start()
        between_digits = 0 < at < len(text) - 1 and text[at - 1].isdigit() and text[at + 1].isdigit()
        return "." if between_digits and match.group() in ".," else " "

    return _punctuation().sub(replace, text)


def normalise_answer(text: str) -> str:
    """``text`` in the form answers and documents are compared in (see the module doc)."""
    text = unicodedata.normalize("NFKC", text).translate(_ascii_digits())
    text = _GROUPED_NUMBER.sub(lambda m: m[1] + m[3].replace(m[2], ""), text)
    return " ".join(_strip_punctuation(text.casefold()).split())


def match_form(text: str, lang: str) -> str:
    """The normalised text, without spaces in a script written without them."""
    normalised = normalise_answer(text)
    return normalised.replace(" ", "") if rule_for(lang).needs_segmentation else normalised


class AnswerMatcher:
    """Finds one gold answer of language ``lang`` in documents of that language (given in :func:`match_form`)."""

    def __init__(self, answer: str, lang: str) -> None:
        self.form = match_form(answer, lang)
        if not self.form:
            raise ValueError(f"answer {answer!r} has no letters or digits to look for")
        whole_token = not rule_for(lang).needs_segmentation and len(self.form) <= SHORT_ANSWER_CHARS
        left = r"(?<!\d)(?<!\d\.)" if self.form[0].isdigit() else r"(?<!\w)" if whole_token else ""
        right = r"(?!\d)(?!\.\d)" if self.form[-1].isdigit() else r"(?!\w)" if whole_token else ""
        self._pattern = re.compile(left + re.escape(self.form) + right)

    def found_in(self, document_form: str) -> bool:
        return self._pattern.search(document_form) is not None
