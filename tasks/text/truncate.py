"""The CLIRMatrix length rule: documents are cut before indexing.

CLIRMatrix indexed only the beginning of each article (about 600 characters
for scripts without spaces, about 200 tokens otherwise); the limits come from
the language rule so every stage cuts documents the same way.

Cutting runs once per document of every index build, so space-separated text
that is pure ASCII takes a faster path (see ``_cut_ascii_words``) that cuts
exactly where the Unicode word pattern does.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from itertools import islice

from tasks.errors import ConfigError
from tasks.text.languages import rule_for
from tasks.text.segment import _WORD_CHARS, _WORDLIKE, _words_prefix, end_of_word, token_spans

# What the word patterns' Unicode properties match among ASCII characters:
# letters are A-Z and a-z, numbers 0-9, and there are no combining marks.
_ASCII_WORD_CHARS = "A-Za-z0-9"
_ASCII_NUMBER = "[0-9]"
# Every byte of an ASCII word character becomes "a", every other byte a space,
# so that runs of word characters can be counted with bytes.count.
_RUN_MARKS = bytes(ord("a") if chr(byte) in string.ascii_letters + string.digits else ord(" ") for byte in range(256))
# Counting runs is only worth it for texts that may have at most ``limit``
# words: prose averages about 6 characters per word with its separator, so a
# text longer than this many characters per allowed word is nearly always cut,
# and goes straight to the match that finds where.
_RUN_COUNT_CHARS_PER_WORD = 16


def truncate(text: str, lang: str) -> str:
    """The first ``truncate_limit`` characters or tokens of ``text``.

    A token cut ends at the end of the N-th word, so the text keeps its own
    spacing and punctuation up to there; a text with at most N words is
    returned whole, trailing punctuation included.
    """
    rule = rule_for(lang)
    limit = rule.truncate_limit
    if rule.truncate_unit == "chars":
        return text[:limit]
    if rule.truncate_unit != "tokens":
        raise ConfigError(f"language rule {lang!r}: unknown truncate_unit {rule.truncate_unit!r} (chars or tokens)")
    if rule.segmenter == "whitespace":  # the hot path of indexing
        return _cut_ascii_words(text, limit) if text.isascii() else _cut_words(text, limit)
    spans = list(islice(token_spans(text, lang), limit + 1))
    if len(spans) <= limit:
        return text
    return text[: spans[limit - 1][1]]


def _cut_words(text: str, limit: int) -> str:
    """The cut after the ``limit``-th word of a space-separated script, for any text: one ``regex`` match."""
    end = end_of_word(text, limit)
    return text if end is None or not _WORDLIKE.search(text, end) else text[:end]


def _narrowed_to_ascii(pattern: str) -> str:
    """A word pattern of ``tasks.text.segment`` with its Unicode properties replaced by their ASCII members.

    On ASCII text the narrowed pattern matches exactly what the original does,
    and stdlib ``re`` runs it several times faster than ``regex`` runs the
    original (it tests plain ranges instead of Unicode properties). Deriving it
    keeps the two in step; a property this does not know is refused rather
    than guessed.
    """
    narrowed = pattern.replace(_WORD_CHARS, _ASCII_WORD_CHARS).replace(r"\p{N}", _ASCII_NUMBER)
    if r"\p" in narrowed:
        raise RuntimeError(f"no ASCII narrowing for a Unicode property in the word pattern {pattern!r}")
    return narrowed


@lru_cache(maxsize=8)
def _ascii_words_prefix(count: int) -> re.Pattern[str]:
    """``tasks.text.segment._words_prefix(count)`` for ASCII text, in stdlib ``re``."""
    return re.compile(_narrowed_to_ascii(_words_prefix(count).pattern))


_ASCII_WORD_CHAR = re.compile(f"[{_ASCII_WORD_CHARS}]")


def _ascii_runs(text: str) -> int:
    """How many runs of letters and digits the ASCII ``text`` has, counted in three C passes."""
    marks = text.encode("ascii").translate(_RUN_MARKS)
    return marks.count(b" a") + int(marks.startswith(b"a"))


def _cut_ascii_words(text: str, limit: int) -> str:
    """``_cut_words`` for ASCII text, with the same result, cheaply when there is nothing to cut.

    A word is one run of letters and digits or several joined by an
    apostrophe, or by a point or comma between digits; so a text has at most
    as many words as runs, and one with at most ``limit`` runs is returned
    whole after counting them (about 2 µs for 700 characters, where the
    ``regex`` match takes about 65 µs). Other texts are matched by the ASCII
    form of the general pattern: where it ends is the end of the
    ``limit``-th word, and ASCII has no combining marks, so any word character
    after it starts another word (``_WORDLIKE``'s test).
    """
    if len(text) <= limit * _RUN_COUNT_CHARS_PER_WORD and _ascii_runs(text) <= limit:
        return text
    match = _ascii_words_prefix(limit).match(text)
    if match is None or not _ASCII_WORD_CHAR.search(text, match.end()):
        return text
    return text[: match.end()]
