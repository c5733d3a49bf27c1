"""sacreBLEU's ``13a`` and ``zh`` tokenizers with their own output, padding characters in C instead of Python.

sacreBLEU pads characters through ``re`` templates, which Python 3.11 expands in Python for every match;
the same paddings are maps of single characters that ``str.translate`` applies in C, and the other rules
become literal replacements (:class:`TranslatedRegexp`).  sacreBLEU stays the scorer — only a ``BLEU``
object's tokenizer is swapped (:func:`translated`) — and ``tests/evaluation/test_bleu_tokens.py`` checks the tokens
against sacreBLEU's own.

See ``docs/arena.md``, "Speed".
"""

from __future__ import annotations

import re
from functools import cache

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_base import BaseTokenizer
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh


@cache
def _punctuation() -> str:
    """The characters of ``TokenizerRegexp``'s first rule (an ASCII class, so ASCII is all to ask it about)
    but the space: padding a space only lengthens a run of spaces, and half the time went into doing it."""
    pattern, _ = TokenizerRegexp()._re[0]
    return "".join(char for char in map(chr, range(128)) if pattern.fullmatch(char) and char != " ")


@cache
def _chinese() -> str:
    """The characters ``TokenizerZh`` calls Chinese, asked of it for every BMP character.

    Its ranges compare strings, and the bounds it means as CJK extension B
    (``'\\u20000'``) are two characters long in Python, so no character beyond
    the BMP is Chinese to it (and U+2001–U+2A6D are).
    """
    return "".join(char for char in map(chr, range(0x10000)) if TokenizerZh._is_chinese_char(char))


def _padding(chars: str) -> list[str]:
    """A ``str.translate`` table that surrounds each of ``chars`` with spaces and keeps every other character.

    A list, not a dict: translate looks a character up by its index and keeps
    one past the end as it is, where a dict raises and catches a ``KeyError``
    for every character it leaves alone, which takes twice as long.
    """
    table = [chr(code) for code in range(max(map(ord, chars)) + 1)]
    for char in chars:
        table[ord(char)] = f" {char} "
    return table


def _run(line: str) -> bool:
    """Whether two periods or commas follow each other in ``line``: where the second and third rules' matches
    depend on each other. Four substring searches, where ``re`` tries a pattern that starts with a class at
    every position (1 µs against 4 µs for a line of 200 characters)."""
    return ".." in line or ".," in line or ",." in line or ",," in line


# A period or comma that has a character other than an ASCII digit before or after it (literal prefix: fast scan).
_PERIOD = re.compile(r"\.(?:(?<=[^0-9]\.)|(?=[^0-9]))")
_COMMA = re.compile(r",(?:(?<=[^0-9],)|(?=[^0-9]))")
# A hyphen after an ASCII digit.
_HYPHEN = re.compile(r"-(?<=[0-9]-)")


class TranslatedRegexp(TokenizerRegexp):
    """sacreBLEU's ``TokenizerRegexp`` with its rules as steps that need no Python per match, padding ``chars``
    (the first rule's class, and any characters to pad in the same pass) by a translate table.

    What counts in the end is where tokens split, as the last step splits on
    whitespace. The second rule (a period or comma after a non-digit) and the
    third (one before a non-digit) each pad the character they match on both
    sides. Their matches consume the characters, which matters only inside a
    run of periods and commas: there one match can take the character the
    next would have started from. A lone period or comma is matched by the
    second rule exactly when a non-digit precedes it, and failing that by the
    third exactly when a non-digit follows it (the second rule's spaces go
    around other periods and commas, never beside this one); so it is padded
    when either neighbour exists and is not an ASCII digit, which one literal
    replacement per character does. A line with a run takes sacreBLEU's own
    two rules. The fourth rule (a digit and a hyphen) matches every hyphen
    after a digit, as a digit is never the hyphen a match consumed, and the
    spaces of the rules before never separate a digit from a hyphen.
    """

    def __init__(self, chars: str) -> None:
        super().__init__()
        self._table = _padding(chars)

    def __call__(self, line: str) -> str:
        line = line.translate(self._table)
        if "." in line or "," in line:
            line = self._periods_and_commas(line)
        if "-" in line:
            line = _HYPHEN.sub(" - ", line)
        return " ".join(line.split())

    def _periods_and_commas(self, line: str) -> str:
        """The second and third rules' work on ``line``."""
        if _run(line):
            for pattern, template in self._re[1:3]:
                line = pattern.sub(template, line)
            return line
        return _COMMA.sub(" , ", _PERIOD.sub(" . ", line))


class Translated13a(Tokenizer13a):
    """sacreBLEU's ``13a``: its own preprocessing, then :class:`TranslatedRegexp`."""

    def __init__(self) -> None:
        self._post_tokenizer = TranslatedRegexp(_punctuation())


class TranslatedZh(TokenizerZh):
    """sacreBLEU's ``zh``: Chinese characters and the first rule's characters padded by one table."""

    def __init__(self) -> None:
        self._post_tokenizer = TranslatedRegexp(_punctuation() + _chinese())

    def __call__(self, line: str) -> str:
        return self._post_tokenizer(line.strip())


#: the tokenizers rewritten here, by sacreBLEU's name (its ``signature()``)
TRANSLATED = {"13a": Translated13a, "zh": TranslatedZh}


def translated(tokenizer: BaseTokenizer) -> BaseTokenizer:
    """The rewritten equivalent of sacreBLEU's ``tokenizer``, or ``tokenizer`` itself when there is none."""
    rewrite = TRANSLATED.get(tokenizer.signature())
    return rewrite() if rewrite else tokenizer
