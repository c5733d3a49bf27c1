"""Numbers as a locale writes them, read into one spelling: digits of any script, separators, percent and minus.

A number is compared by its value, so it must be read before anything cuts
text into words or characters: "1,959" is one number in English, not "1"
and "959", and Khmer "១៩៥៩" is 1959, not four characters.  Every fact comes
from CLDR through ICU, per numbering system, because the separators depend
on the digits: Khmer writes "1,234.5" with Latin digits and "១.២៣៤,៥" with
its own, Arabic "١٬٢٣٤٫٥".  Digits are those Unicode calls decimal digits
(``\\p{Nd}``: Arabic-Indic, Devanagari, Thai, Khmer, full-width …) and the
digits of the locale's own decimal numbering systems that are letters too
(Chinese "〇一二…九", ``hanidec``): those only where they cannot be a word,
in a run of at least two or standing alone ("二〇一九", "五", but not the "一"
of "统一").
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import regex

from tasks.metrics.locale_formats import decimal_digits, number_symbols, numbering_systems

# thousands are grouped by a space (no-break ones are spaces once folded) only in groups of three ("1 000 000")
_SPACE = " "
_MARK = regex.compile(r"[^0-9]")
_DIGIT_RUN = regex.compile(r"[0-9]+")
_LETTER = regex.compile(r"\p{L}")


@dataclass(frozen=True)
class _Reader:
    number: regex.Pattern[str]
    letters: frozenset[str]  # the locale's digits that are letters too (hanidec)
    other_digits: regex.Pattern[str]  # runs of its digits other than ASCII ones


@lru_cache(maxsize=None)
def _reader(locale: str) -> _Reader:
    """The pattern of a number in ``locale``: digits joined by the marks of its numbering systems, with a minus
    before and a percent sign before or after (Turkish writes "%12")."""
    systems = [number_symbols(locale, system) for system in numbering_systems(locale)]
    letters = "".join(sorted(digit for digit, (system, _) in decimal_digits().items()
                             if system in numbering_systems(locale) and unicodedata.decimal(digit, None) is None))
    digit = rf"[\p{{Nd}}{regex.escape(letters)}]"
    marks = regex.escape("".join(sorted({".", ",", *(s.decimal for s in systems), *(s.group for s in systems)}
                                        - {_SPACE})))
    percents = regex.escape("".join(sorted({"%", *(s.percent for s in systems)})))
    minus = regex.escape("".join(sorted({"-", *(s.minus for s in systems)})))
    number = (rf"(?<!{digit}){digit}{{1,3}}(?:{_SPACE}{digit}{{3}})+(?:[{marks}]{digit}+)*(?!{digit})"
              rf"|{digit}+(?:[{marks}]{digit}+)*")
    return _Reader(regex.compile(rf"(?:(?<![\p{{L}}\p{{N}}])(?P<minus>[{minus}]))?(?P<before>[{percents}])?"
                                 rf"(?P<number>{number})(?:\s?(?P<after>[{percents}]))?"),
                   frozenset(letters), regex.compile(rf"(?:(?![0-9]){digit})+"))


def _digit(char: str) -> tuple[str | None, int] | None:
    """The numbering system (None where ICU has none) and value of a digit; None for any other character."""
    known = decimal_digits().get(char)
    if known is not None:
        return known
    value = unicodedata.decimal(char, None)
    return None if value is None else (None, value)


def _ascii(text: str) -> str:
    return "".join(str(digit[1]) if (digit := _digit(char)) else char for char in text)


def _readable(text: str, start: int, end: int, letters: frozenset[str]) -> bool:
    """Whether the digits in ``text[start:end]`` are digits, not letters of a word: always for ``\\p{Nd}``;
    for digits that are letters too, two or more of them, or one with no letter beside it."""
    span = text[start:end]
    if not letters or not letters.intersection(span):
        return True
    beside = text[max(start - 1, 0):start] + text[end:end + 1]
    return sum(_digit(char) is not None for char in span) >= 2 or not _LETTER.search(beside)


def canonical_number(text: str, decimal: str, group: str) -> str | None:
    """One spelling of the number ``text`` (ASCII digits and separators): no group separators, a point for the
    decimal mark, no leading or trailing zeros; None when it is not one number with these separators ("1.2.3").

    The decimal mark, at most once and last, starts the fraction; what is before it must be grouped properly
    (a first group of 1–3 digits not starting with 0, then groups of exactly three, by one mark that is not the
    decimal one), or be plain digits.  A single point or comma that cannot group ("3,5" in English, "0.125" in
    German) can only be a decimal mark, and is read as one.
    """
    parts, marks = _MARK.split(text), _MARK.findall(text)
    whole, fraction, grouping = parts, "", marks
    if decimal in marks:
        if marks.count(decimal) > 1 or marks[-1] != decimal:
            return None
        whole, fraction, grouping = parts[:-1], parts[-1], marks[:-1]
    if _grouped(whole, grouping):
        return _plain("".join(whole), fraction)
    if len(marks) == 1 and marks[0] in ".,":
        return _plain(parts[0], parts[1])
    return None


def _grouped(parts: list[str], marks: list[str]) -> bool:
    """Whether digit runs ``parts`` joined by ``marks`` are one integer written with thousands groups."""
    if not marks:
        return True
    return (len(set(marks)) == 1 and 1 <= len(parts[0]) <= 3 and not parts[0].startswith("0")
            and all(len(part) == 3 for part in parts[1:]))


def _plain(whole: str, fraction: str) -> str:
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def number_spans(text: str, locale: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """Where ``text`` (as :func:`~tasks.metrics.locale_formats.fold` leaves it) writes numbers in ``locale``, and
    the tokens each stands for.

    A number gives one token, its :func:`canonical_number` with "-" before it when negative, and a percentage
    a second one, "%", as a unit ("١٢٪", "12 %" and Turkish "%12" are all "12", "%").  Digits and marks that
    are not one number ("1.2.3", "192.168.0.1") give each run of digits as a token, without its leading zeros.
    """
    reader, spans = _reader(locale), []
    for match in reader.number.finditer(text):
        start, end = match.span("number")
        if not _readable(text, start, end, reader.letters):
            continue
        written = match.group("number")
        if written.isascii():
            systems, plain = {"latn"}, written
        else:
            systems, plain = {digit[0] for char in written if (digit := _digit(char))}, _ascii(written)
        value = None
        if len(systems) == 1:
            symbols = number_symbols(locale, systems.pop() or numbering_systems(locale)[0])
            value = canonical_number(plain, symbols.decimal, symbols.group)
        if value is None:
            spans.append((start, end, tuple(run.lstrip("0") or "0" for run in _DIGIT_RUN.findall(plain))))
            continue
        sign = "-" if match.group("minus") and value != "0" else ""
        percent = ("%",) if match.group("before") or match.group("after") else ()
        spans.append((*match.span(), (sign + value, *percent)))
    return spans


def ascii_digits(text: str, locale: str) -> str:
    """``text`` with every digit of ``locale`` as an ASCII digit, the digits that are letters too included (the
    一 of Chinese 星期一): for text that is read whole, as a date is, where a digit cannot be part of a word."""
    return text if text.isascii() else _reader(locale).other_digits.sub(lambda digits: _ascii(digits.group()), text)
