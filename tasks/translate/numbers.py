"""Numbers in a text, as values that can be compared across languages and scripts.

A translation writes the same number differently: other digits (١٩٩٨, १९९८,
１９９８), other separators (18,300 / 18.300 / 18 300 / 18'300 / 18,3 for
18.3) and, in Chinese, Japanese and Korean, myriad units (18万4000, 18.4万,
18만 4천 for 184,000).  Reading a number needs conventions the text does not
state: "2.314" is 2314 in German and 2.314 in English.  Rather than guess the
convention from the language, a mention keeps every plausible *reading*, and
the gate asks whether some reading of each source number is among the values
the translation can be read as.  Ambiguity can therefore only make the check
more lenient, never reject a correct translation.

Signs are ignored (−5 may become "minus 5"), and so are numbers written as
words ("three", "drei") and numerals written in CJK characters (三千) — a
translation is expected to keep digits as digits, which the prompt asks for.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

# Characters that separate thousands: comma, period, apostrophes, the spaces
# used in French, Russian and SI style (plain, no-break, narrow no-break, thin),
# the Arabic thousands separator.
_THOUSANDS = ",.'’ \u00a0\u202f\u2009\u066c"
_SPACES = " \u00a0\u202f\u2009"
# Characters that mark decimals: period, comma, the Arabic decimal separator.
_DECIMAL = ".,\u066b"
# Full-width punctuation as written next to digits in CJK text.
_FULL_WIDTH = str.maketrans({"\uff0c": ",", "\uff0e": "."})

_THOUSANDS_CLASS = "[" + re.escape(_THOUSANDS) + "]"
_DECIMAL_CLASS = "[" + re.escape(_DECIMAL) + "]"
_NUMBER = re.compile(
    # 1–3 digits, then groups of exactly three after one repeated separator, then decimals after another mark
    rf"(?<![0-9])(?P<lead>[0-9]{{1,3}})(?P<sep>{_THOUSANDS_CLASS})[0-9]{{3}}(?:(?P=sep)[0-9]{{3}})*(?![0-9])"
    rf"(?:(?!(?P=sep))(?P<dec>{_DECIMAL_CLASS})[0-9]+)?"
    # or plain digits with separators between runs of any length: 2020, 1,5, 3.10.1990, 1,2,3
    rf"|(?P<plain>[0-9]+(?:{_DECIMAL_CLASS}[0-9]+)*)"
)
# CJK and Korean myriad units written after digits: 18万4000, 1億2000万, 18만 4천.  Chinese 千 is left
# out: after digits it is as often the kilo- of a unit (3千米 is 3 km, 5千克 5 kg) as a thousand.
_UNITS = {"万": 10**4, "萬": 10**4, "億": 10**8, "亿": 10**8, "천": 10**3, "만": 10**4, "억": 10**8}

Reading = tuple[Decimal, ...]


@dataclass(frozen=True)
class NumberMention:
    """One number as written (``surface``) and the values it can be read as.

    Each reading is a tuple of values that must all be present: "18 300" reads
    as (18300,) or as the two numbers (18, 300) that a space can also separate.
    """

    surface: str
    readings: tuple[Reading, ...]

    @property
    def values(self) -> set[Decimal]:
        return {value for reading in self.readings for value in reading}


def ascii_digits(text: str) -> str:
    """``text`` with every decimal digit of any script (Nd) as its ASCII digit, lengths unchanged.

    Superscripts and other digit-like symbols (², ½, ①) are not decimal digits
    and are left alone, so "km²" does not become a number.
    """
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch for ch in text)


def _value(digits: str, decimals: str = "") -> Decimal:
    return Decimal(f"{digits}.{decimals}" if decimals else digits)


def _readings(match: re.Match[str]) -> tuple[Reading, ...]:
    token = match.group(0)
    if match.group("plain") is not None:
        parts = re.split(_DECIMAL_CLASS, token)
        if len(parts) == 2:
            return ((_value(parts[0], parts[1]),),)  # 1,5 or 2018.5: a decimal number
        return (tuple(_value(part) for part in parts),)  # 3.10.1990, 1,2,3: a run of numbers
    sep, dec = match.group("sep"), match.group("dec")
    integer, decimals = (token.rsplit(dec, 1) if dec else (token, ""))
    groups = integer.split(sep)
    readings: list[Reading] = [(_value("".join(groups), decimals),)]
    if sep in _SPACES:
        # a space may also just separate two numbers: "in 5 100-metre heats"
        readings.append(tuple(_value(g) for g in groups[:-1]) + (_value(groups[-1], decimals),))
    elif sep in _DECIMAL and len(groups) == 2 and not dec:
        readings.append((_value(groups[0], groups[1]),))  # 2.314 and 2,314 are decimals in half the world
    return tuple(readings)


def find_numbers(text: str) -> list[NumberMention]:
    """Every number of ``text`` in order, with its readings; myriad-unit numbers are combined."""
    normal = ascii_digits(text).translate(_FULL_WIDTH)
    matches = list(_NUMBER.finditer(normal))
    mentions: list[NumberMention] = []
    index = 0
    while index < len(matches):
        match = matches[index]
        unit = _unit_after(normal, match.end())
        if unit is None:
            mentions.append(NumberMention(text[match.start():match.end()], _readings(match)))
            index += 1
            continue
        # 18万4000: each number times its unit, units descending, an optional plain tail below the last unit
        total = _readings(match)[0][0] * unit
        parts = [_readings(match)[0][0]]
        end = match.end() + 1
        index += 1
        while index < len(matches) and _adjacent(normal, end, matches[index].start()):
            following = matches[index]
            value = _readings(following)[0][0]
            next_unit = _unit_after(normal, following.end())
            if next_unit is not None and next_unit < unit:
                total, unit, end = total + value * next_unit, next_unit, following.end() + 1
            elif next_unit is None and value < unit:
                total, end = total + value, following.end()
            else:
                break
            parts.append(value)
            index += 1
            if next_unit is None:
                break
        mentions.append(NumberMention(text[match.start():end], ((total,), tuple(parts))))
    return mentions


def _unit_after(text: str, position: int) -> int | None:
    return _UNITS.get(text[position]) if position < len(text) else None


def _adjacent(text: str, end: int, start: int) -> bool:
    """Whether the next number follows a unit at once, or after one space (Korean writes 18만 4000)."""
    return start == end or (start == end + 1 and text[end] == " ")


def number_values(text: str) -> set[Decimal]:
    """Every value any number of ``text`` can be read as."""
    return {value for mention in find_numbers(text) for value in mention.values}


def missing_numbers(source: str, translation: str) -> list[str]:
    """The source's numbers (as written) that no reading finds among the translation's values."""
    present = number_values(translation)
    return [m.surface for m in find_numbers(source) if not any(set(r) <= present for r in m.readings)]
