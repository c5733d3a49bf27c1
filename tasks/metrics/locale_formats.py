"""How a locale writes numbers and dates, read from CLDR (through ICU): separators, date order, month names.

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
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

DateOrder = Literal["dmy", "mdy", "ymd"]
_QUOTED = re.compile(r"'[^']*'")  # literal text inside a CLDR date pattern


@dataclass(frozen=True)
class LocaleFormats:
    """``decimal`` and ``group``: the decimal and thousands separators; ``date_order``: the order of a numeric
    date's fields in the locale's short date format; ``months``: per month (January first) its names in lower
    case, wide and abbreviated, as used in a date and standing alone (Russian "января" and "январь")."""

    decimal: str
    group: str
    date_order: DateOrder
    months: tuple[tuple[str, ...], ...]


@lru_cache(maxsize=None)
def locale_formats(locale: str) -> LocaleFormats:
    """The number and date conventions of ``locale`` (see the module notes)."""
    import icu  # noqa: PLC0415 (ICU is loaded by the first locale asked for, not by importing the scorers)

    where = icu.Locale(locale.replace("-", "_"))
    if where.getLanguage() not in _known_languages():
        where = icu.Locale.getRoot()  # not ICU's own fallback, the machine's default locale
    numbers = icu.DecimalFormatSymbols(where)
    pattern = icu.DateFormat.createDateInstance(icu.DateFormat.kShort, where).toPattern()
    names = icu.DateFormatSymbols(where)
    standalone = icu.DateFormatSymbols.STANDALONE
    forms = (names.getMonths(), names.getShortMonths(), names.getMonths(standalone, icu.DateFormatSymbols.WIDE),
             names.getMonths(standalone, icu.DateFormatSymbols.ABBREVIATED))
    months = tuple(tuple(dict.fromkeys(name.lower().rstrip(".") for name in month)) for month in zip(*forms, strict=True))
    return LocaleFormats(numbers.getSymbol(icu.DecimalFormatSymbols.kDecimalSeparatorSymbol),
                         numbers.getSymbol(icu.DecimalFormatSymbols.kGroupingSeparatorSymbol),
                         date_order(pattern), months)


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
