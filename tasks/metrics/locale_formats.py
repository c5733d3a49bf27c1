"""How a locale writes numbers and dates, read from CLDR (through ICU): number signs and digits, date order,
month names.

Scoring an answer like "0,125" or "05/01/1990" needs the conventions of the
answer's language: in German the comma is the decimal mark and the point
groups thousands, in English the other way round; "05/01/1990" is the fifth
of January in France and the first of May in the United States.  These are
per-language facts, so they come from data — CLDR, the Unicode locale data,
which ICU (a dependency already, for word segmentation) ships — and not from
a table kept here: any locale ICU knows works without a code change, and one
it does not know falls back to CLDR's root locale (point, comma, year first).

Locale codes are MKQA's (``zh_cn``, ``no``) or Wikipedia's (``zh-yue``): ICU
reads both once a hyphen is an underscore.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import regex

if TYPE_CHECKING:
    import icu

DateOrder = Literal["dmy", "mdy", "ymd"]
_QUOTED = re.compile(r"'[^']*'")  # literal text inside a CLDR date pattern
_BIDI_CONTROLS = regex.compile(r"\p{Bidi_Control}+")
_NUMBERING_KEYWORDS = ("default", "native", "traditional", "finance")  # the numbering systems CLDR gives a locale


@dataclass(frozen=True)
class LocaleFormats:
    """``date_order``: the order of a numeric date's fields in the locale's short date format; ``months``: per
    month (January first) its names in lower case, wide and abbreviated, as used in a date and standing alone
    (Russian "января" and "январь")."""

    date_order: DateOrder
    months: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class NumberSymbols:
    """The signs of one numbering system in one locale, folded (:func:`fold`): decimal and thousands
    separators, percent and minus signs."""

    decimal: str
    group: str
    percent: str
    minus: str


@lru_cache(maxsize=None)
def locale_formats(locale: str) -> LocaleFormats:
    """The date conventions of ``locale`` (see the module notes)."""
    import icu  # noqa: PLC0415 (ICU is loaded by the first locale asked for, not by importing the scorers)

    where = icu_locale(locale)
    pattern = icu.DateFormat.createDateInstance(icu.DateFormat.kShort, where).toPattern()
    names = icu.DateFormatSymbols(where)
    standalone = icu.DateFormatSymbols.STANDALONE
    forms = (names.getMonths(), names.getShortMonths(), names.getMonths(standalone, icu.DateFormatSymbols.WIDE),
             names.getMonths(standalone, icu.DateFormatSymbols.ABBREVIATED))
    months = tuple(tuple(dict.fromkeys(name.lower().rstrip(".") for name in month)) for month in zip(*forms, strict=True))
    return LocaleFormats(date_order(pattern), months)


@lru_cache(maxsize=None)
def number_symbols(locale: str, system: str) -> NumberSymbols:
    """How ``locale`` writes numbers in the numbering system ``system`` (``latn``, ``arab``, ``khmr`` …): Khmer
    groups Latin digits with a comma and its own with a point."""
    import icu  # noqa: PLC0415

    symbols = icu.DecimalFormatSymbols(icu.Locale(f"{icu_locale(locale).getName()}@numbers={system}"))
    kinds = icu.DecimalFormatSymbols
    return NumberSymbols(*(fold(symbols.getSymbol(kind)) for kind in (
        kinds.kDecimalSeparatorSymbol, kinds.kGroupingSeparatorSymbol, kinds.kPercentSymbol, kinds.kMinusSignSymbol)))


@lru_cache(maxsize=None)
def numbering_systems(locale: str) -> tuple[str, ...]:
    """The decimal numbering systems CLDR gives ``locale``, its default first: ("latn", "arab") in Arabic,
    ("latn", "hanidec") in Chinese; systems that spell numbers out (Japanese ``jpan``) are left out."""
    import icu  # noqa: PLC0415

    where = icu_locale(locale).getName()
    names = (icu.NumberingSystem.createInstance(icu.Locale(where if keyword == "default" else
                                                           f"{where}@numbers={keyword}")).getName()
             for keyword in _NUMBERING_KEYWORDS)
    decimal = {system for system, _ in decimal_digits().values()}
    return tuple(name for name in dict.fromkeys(names) if name in decimal)


@lru_cache(maxsize=1)
def decimal_digits() -> dict[str, tuple[str, int]]:
    """Every digit of ICU's decimal numbering systems (Unicode's decimal digits, and letters that are digits in
    a system, such as Chinese "〇一二…九"): the system it belongs to and its value."""
    import icu  # noqa: PLC0415

    digits: dict[str, tuple[str, int]] = {}
    for name in icu.NumberingSystem.getAvailableNames():
        system = icu.NumberingSystem.createInstanceByName(name)
        description = system.getDescription()
        if not system.isAlgorithmic() and system.getRadix() == 10 and len(description) == 10:
            for value, digit in enumerate(description):
                digits.setdefault(digit, (name, value))
    return digits


def icu_locale(locale: str) -> icu.Locale:
    """ICU's locale for ``locale``, or CLDR's root locale where ICU does not know the language."""
    import icu  # noqa: PLC0415

    where = icu.Locale(locale.replace("-", "_"))
    if where.getLanguage() not in _known_languages():
        return icu.Locale.getRoot()  # not ICU's own fallback, the machine's default locale
    return where


def fold(text: str) -> str:
    """``text`` as it is compared with CLDR's words and signs: NFKC, case-folded, without the bidirectional
    controls that CLDR puts around Arabic and Hebrew signs ("\\u200e%\\u200e") and models copy or drop."""
    if text.isascii():  # NFKC leaves ASCII as it is, and it has no bidirectional controls
        return text.lower()
    return _BIDI_CONTROLS.sub("", unicodedata.normalize("NFKC", text).casefold())


@lru_cache(maxsize=1)
def _known_languages() -> frozenset[str]:
    import icu  # noqa: PLC0415

    return frozenset(locale.getLanguage() for locale in icu.Locale.getAvailableLocales().values())


def date_order(pattern: str) -> DateOrder:
    """The field order of a CLDR date pattern: ``dd.MM.yy`` → dmy, ``M/d/yy`` → mdy, ``y/MM/dd`` → ymd."""
    fields = [letter for letter in _QUOTED.sub("", pattern) if letter in "dMy"]
    order = "".join(dict.fromkeys(fields)).lower()
    if order not in ("dmy", "mdy", "ymd"):
        raise ValueError(f"date pattern {pattern!r}: its fields are not in day-month-year, month-day-year or"
                         " year-month-day order")
    return order  # type: ignore[return-value]
