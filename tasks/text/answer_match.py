"""Does a document state the gold answer in so many words? Answer normalisation and containment.

A distractor must not hand the model the answer, so a candidate whose text
contains the item's gold answer (in the candidate's language) is rejected.
Both sides go through the same normalisation so that surface differences do
not hide a match:

* NFKC (full-width forms, ligatures, no-break spaces become plain ones),
  every decimal digit mapped to ASCII (``٤١٢`` is ``412``);
* thousands separators removed inside numbers (``18,300``, ``18.300``,
  ``18 300`` and ``18'300`` are all ``18300``; one separator per number, and
  a leading ``0`` never starts a group, so ``0.412`` stays a decimal);
* case-folded; punctuation (Unicode category P) becomes a space, except a
  ``.`` or ``,`` between digits, which is kept as the decimal mark ``.``
  (``3,5`` and ``3.5`` match); whitespace collapsed;
* in scripts written without spaces (the language rule's segmenter) spaces
  are dropped on both sides, since where a writer put one is arbitrary.

Containment is a substring test with boundaries where a substring would lie:
an answer starting or ending with a digit never matches inside a longer
number (``412`` is not in ``1412``, ``1`` is not in ``1998`` or ``3.1``), and
a short answer (at most :data:`SHORT_ANSWER_CHARS` characters) in a spaced
script must be a whole token (``fc`` is not in ``fcs``). Longer answers are
plain substrings on purpose: an inflected or compounded mention (German
``Velnabrücke`` contains ``Velna``) is more likely a true mention than a
coincidence, and rejecting a candidate too many only costs a candidate.

Known limits, left to the optional answer check (NLI/LLM): paraphrases
(``412 km`` for ``412 kilometres``), answers given as sets in another order,
and a ``,``/``.`` between digit groups that is a decimal mark in one language
and a thousands separator in another (``3,500`` is 3500 here).
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
