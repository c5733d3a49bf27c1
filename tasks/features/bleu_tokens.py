"""sacreBLEU's ``13a`` and ``zh`` tokenizers with their own output, padding characters in C instead of Python.

Both tokenizers end in sacreBLEU's ``TokenizerRegexp``, whose first rule pads
every character of a class (ASCII punctuation and the space) with spaces
through ``re.sub`` and the template ``r' \\1 '``. Python 3.11's ``re``
expands such a template in Python for every match
(``re._parser.expand_template``), so a sentence costs a Python call per space
and punctuation mark; and ``TokenizerZh`` pads the characters it calls
Chinese in a Python loop over the line. Both are maps of single characters
to strings, which ``str.translate`` applies in C. The other rules (a period
or comma not beside a digit, a hyphen after a digit) match a few times a
sentence and run as sacreBLEU's own patterns and templates, and ``13a``'s
preprocessing (``<skipped>``, line breaks, ``&``-escapes) is sacreBLEU's own
code. sacreBLEU stays the scorer: only the tokenizer of a ``BLEU`` object is
swapped (:func:`translated`), and ``tests/test_bleu_tokens.py`` checks the
tokens against sacreBLEU's tokenizers on every BMP character and on many
varied strings.

Why one table for ``zh`` can do both paddings, where sacreBLEU pads in two
passes: the second pass pads the spaces the first inserted, which only
lengthens runs of spaces; the remaining rules see a space as a non-digit
however many there are, and the final split joins tokens with one space.
"""

from __future__ import annotations

from functools import cache

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_base import BaseTokenizer
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh


@cache
def _punctuation() -> str:
    """The characters of ``TokenizerRegexp``'s first rule (an ASCII class, so ASCII is all to ask it about)."""
    pattern, _ = TokenizerRegexp()._re[0]
    return "".join(char for char in map(chr, range(128)) if pattern.fullmatch(char))


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


class TranslatedRegexp(TokenizerRegexp):
    """sacreBLEU's ``TokenizerRegexp`` with its first rule (pad a class of characters) as a translate table
    that pads ``chars``: the class, and any characters to pad in the same pass.

    The other rules run only on a line that has what they match: a period or
    comma (the second and third), a hyphen (the fourth); Chinese text has
    none, and scanning a padded line for them costs more than padding it.
    """

    def __init__(self, chars: str) -> None:
        super().__init__()
        self._table = _padding(chars)
        _, self._no_digit_before, self._no_digit_after, self._hyphen = self._re

    def __call__(self, line: str) -> str:
        line = line.translate(self._table)
        if "." in line or "," in line:
            for pattern, template in (self._no_digit_before, self._no_digit_after):
                line = pattern.sub(template, line)
        if "-" in line:
            pattern, template = self._hyphen
            line = pattern.sub(template, line)
        return " ".join(line.split())


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
