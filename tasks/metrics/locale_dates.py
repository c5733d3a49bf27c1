"""Dates as a locale writes them, read with the locale's own CLDR patterns (through ICU).

Each CLDR date pattern of the locale (its formats and common skeletons) becomes a regular expression, so a
locale ICU knows needs no code; ISO 8601, English dates and the year alone are read beside them, a
non-Gregorian calendar also as Gregorian, and the rest is left to dateutil.  A two-digit year is known up
to its century, as ICU parses one.

See ``docs/mkqa.md``, "How the improved mode reads an answer".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import regex
from dateutil import parser as date_parser

from tasks.metrics.locale_formats import LocaleFormats, fold, icu_locale, locale_formats
from tasks.metrics.locale_numbers import ascii_digits

if TYPE_CHECKING:
    import icu

SKELETONS = ("y", "yM", "yMMM", "yMMMM", "yMd", "yMMMd", "yMMMMd", "yMEd", "yMMMEd", "yMMMMEd", "yMEEEEd",
             "yMMMEEEEd", "yMMMMEEEEd", "Md", "MMMd", "MMMMd", "MEd", "MMMEd", "MMMMEEEEd")
ISO_PATTERNS = ("yyyy-MM-dd", "yyyy-MM", "yyyy")
ENGLISH = ("en", "en_GB")  # month first and day first
_SEPARATOR = r"[\s\p{P}]"
_WORDS = regex.compile(r"[^\s\p{P}]+")
_DIGIT = regex.compile(r"[0-9]")
_PATTERN_TOKEN = regex.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")
_NUMERIC = frozenset("yuYdMLce")  # fields that may be digits (M, L, c, e only when short)
_DATE_DEFAULTS = (datetime(1, 1, 1), datetime(2, 2, 2))
_YEAR_FIRST = regex.compile(r"\s*[0-9]{4}(?![0-9])")

Token = tuple[bool, str]  # (is a field, its letters or the literal text)


@dataclass(frozen=True)
class DateParts:
    """What a date states: year, month and day, None for a part it leaves out; ``century_known`` False for a
    two-digit year, whose ``year`` is then the year modulo 100."""

    year: int | None
    month: int | None
    day: int | None
    century_known: bool = True

    def agrees(self, other: DateParts) -> bool:
        """Whether the two name the same date: the same parts, a two-digit year only up to the century."""
        if (self.month, self.day) != (other.month, other.day) or (self.year is None) != (other.year is None):
            return False
        if self.year is None or other.year is None:
            return True
        if self.century_known and other.century_known:
            return self.year == other.year
        return self.year % 100 == other.year % 100


def dates_agree(first: Iterable[DateParts], second: Iterable[DateParts]) -> bool:
    """Whether some reading of one text agrees with some reading of the other."""
    second = tuple(second)
    return any(a.agrees(b) for a in first for b in second)


@lru_cache(maxsize=1 << 16)
def read_dates(text: str, locale: str) -> frozenset[DateParts]:
    """Every date ``text`` can be in ``locale`` (one per calendar the locale counts in); empty when none."""
    normal = _date_text(text, locale)
    if not _DIGIT.search(normal):
        return frozenset()
    readings = frozenset(reading for reader in _readers(locale) if (reading := reader.read(normal)) is not None)
    return readings or _dateutil_reading(normal, locale)


def _date_text(text: str, locale: str) -> str:
    """``text`` as dates are read: folded, every digit ASCII, single spaces."""
    return " ".join(ascii_digits(fold(text), locale).split())


@dataclass(frozen=True)
class _Reader:
    """The patterns of one locale and calendar as one regular expression, and the names its fields match."""

    pattern: regex.Pattern[str]
    months: dict[str, int]
    eras: dict[str, int]
    calendar: icu.Locale | None  # None: Gregorian

    def read(self, text: str) -> DateParts | None:
        match = self.pattern.fullmatch(text)
        if match is None:
            return None
        fields = match.groupdict()
        month = int(fields["month"]) if fields.get("month") else self.months.get(fields.get("monthname") or "")
        day = int(fields["day"]) if fields.get("day") else None
        year = fields.get("year")
        era = self.eras.get(fields.get("era") or "")
        if year is None:
            return DateParts(None, month, day)
        if self.calendar is None and era in (None, 1):  # Gregorian, no era or the common one
            return DateParts(int(year), month, day, len(year) != 2)
        return _gregorian(int(year), month, day, era, self.calendar, len(year) != 2)


def _gregorian(year: int, month: int | None, day: int | None, era: int | None, calendar: icu.Locale | None,
               century_known: bool) -> DateParts:
    """A date of ``calendar`` (its locale; None: Gregorian, with a BC or AD era) as Gregorian parts; a two-digit
    year is converted as if it were the whole year, then taken modulo 100."""
    import icu  # noqa: PLC0415

    fields = icu.UCalendarDateFields
    source = icu.Calendar.createInstance(calendar or icu.Locale("en@calendar=gregorian"))
    source.clear()
    if era is not None:
        source.set(fields.ERA, era)
    source.set(fields.YEAR, year)
    source.set(fields.MONTH, (month or 1) - 1)
    source.set(fields.DATE, day or 1)
    target = icu.Calendar.createInstance(icu.Locale("en@calendar=gregorian"))
    target.setTime(source.getTime())
    converted = target.get(fields.EXTENDED_YEAR)
    if month is not None and day is not None:
        month, day = target.get(fields.MONTH) + 1, target.get(fields.DATE)
    return DateParts(converted if century_known else converted % 100, month, day, century_known)


@lru_cache(maxsize=None)
def _readers(locale: str) -> tuple[_Reader, ...]:
    """The locale's readers: in its own calendar where that is not the Gregorian one, then in the Gregorian one."""
    import icu  # noqa: PLC0415

    where = icu_locale(locale)
    if icu.Calendar.createInstance(where).getType() == "gregorian":
        return (_reader(locale, where, gregorian=True),)
    gregorian = icu.Locale(f"{where.getName()}@calendar=gregorian")
    return _reader(locale, where, gregorian=False), _reader(locale, gregorian, gregorian=True)


def _reader(locale: str, where: icu.Locale, gregorian: bool) -> _Reader:
    """One reader of all the patterns of ``where`` (``locale`` in one calendar); in the Gregorian calendar also
    ISO 8601 and the English patterns with a spelled-out month (not the numeric ones: "3/7/19" is not read
    month first in French)."""
    import icu  # noqa: PLC0415

    sources = [where, *(icu.Locale(name) for name in ENGLISH)] if gregorian else [where]
    branches = [_tokens(pattern) for pattern in _patterns(where)]
    branches += [tokens for other in sources[1:] for tokens in map(_tokens, _patterns(other)) if _spelled_month(tokens)]
    if gregorian:
        branches += [_tokens(pattern) for pattern in ISO_PATTERNS]
    branches += [year for tokens in list(branches) if (year := _year_alone(tokens))]
    symbols = [_symbols(source) for source in sources]
    names = {"month": _names((names for symbol in symbols for names in _month_names(symbol)), locale),
             "weekday": _names((names for symbol in symbols for names in _weekday_names(symbol)), locale),
             "era": _names([list(symbols[0].getEras()), list(symbols[0].getEraNames())], locale)}
    body = "|".join(dict.fromkeys(_branch(tokens, names, locale) for tokens in branches))
    return _Reader(regex.compile(rf"{_SEPARATOR}*(?:{body}){_SEPARATOR}*"), names["month"], names["era"],
                   None if gregorian else where)


def _spelled_month(tokens: list[Token]) -> bool:
    return any(field and letters[0] in "ML" and len(letters) >= 3 for field, letters in tokens)


def _patterns(where: icu.Locale) -> list[str]:
    """The locale's date formats (short to full) and its patterns for :data:`SKELETONS`."""
    import icu  # noqa: PLC0415

    styles = (icu.DateFormat.kShort, icu.DateFormat.kMedium, icu.DateFormat.kLong, icu.DateFormat.kFull)
    generator = icu.DateTimePatternGenerator.createInstance(where)
    return [*(icu.DateFormat.createDateInstance(style, where).toPattern() for style in styles),
            *(generator.getBestPattern(skeleton) for skeleton in SKELETONS)]


def _tokens(pattern: str) -> list[Token]:
    """A CLDR pattern as fields ("MMMM") and literal text (quoted or not: "'de'" is "de", "''" an apostrophe)."""
    tokens: list[Token] = []
    for match in _PATTERN_TOKEN.finditer(pattern):
        text = match.group()
        if match.group(1):
            tokens.append((True, text))
        else:
            literal = "'" if text == "''" else text[1:-1].replace("''", "'") if text.startswith("'") else text
            if tokens and not tokens[-1][0]:
                tokens[-1] = (False, tokens[-1][1] + literal)
            else:
                tokens.append((False, literal))
    return tokens


def _year_alone(tokens: list[Token]) -> list[Token] | None:
    """The year of a pattern with the literal text around it ("y年" from "y年M月d日", "y 'г'." from Russian
    "LLLL y 'г'."), or None when the pattern has no year or is the year alone already."""
    at = next((i for i, (field, letters) in enumerate(tokens) if field and letters[0] in "yu"), None)
    if at is None:
        return None
    start = at - 1 if at and not tokens[at - 1][0] else at
    alone = tokens[start:at + 2 if at + 1 < len(tokens) and not tokens[at + 1][0] else at + 1]
    return None if alone == tokens else alone


def _branch(tokens: list[Token], names: dict[str, dict[str, int]], locale: str) -> str:
    """One pattern as a regular expression (see the module notes)."""
    parts = []
    for i, (field, text) in enumerate(tokens):
        if field:
            parts.append(_field(text, names))
            continue
        words = _WORDS.findall(_date_text(text, locale))
        between_numbers = 0 < i < len(tokens) - 1 and _numeric(tokens[i - 1]) and _numeric(tokens[i + 1])
        if not words:
            parts.append(f"{_SEPARATOR}+" if between_numbers else f"{_SEPARATOR}*")
            continue
        literal = f"{_SEPARATOR}*" + f"{_SEPARATOR}*".join(map(regex.escape, words)) + f"{_SEPARATOR}*"
        parts.append(f"(?:{literal}|{_SEPARATOR}*)" if i == len(tokens) - 1 else literal)
    return "".join(parts)


def _numeric(token: Token) -> bool:
    field, letters = token
    return field and letters[0] in _NUMERIC and (letters[0] in "yuYd" or len(letters) <= 2)


def _field(letters: str, names: dict[str, dict[str, int]]) -> str:
    """The regular expression of one pattern field."""
    kind, count = letters[0], len(letters)
    if kind in "yuY":
        # "y" as ICU parses it: a two-digit year is a year of the century, "yyyy" four digits
        digits = "{2}" if count == 2 else f"{{{count}}}" if count > 2 else "{1,4}"
        return f"(?P<year>[0-9]{digits})"
    if kind in "ML":
        return r"(?P<month>1[0-2]|0?[1-9])" if count <= 2 else f"(?P<monthname>{_alternatives(names['month'])})"
    if kind == "d":
        return r"(?P<day>3[01]|[12][0-9]|0?[1-9])"
    if kind == "E" or (kind in "ce" and count >= 3):
        return f"(?:{_alternatives(names['weekday'])})"
    if kind in "ce":
        return "[1-7]"
    if kind == "G":
        return f"(?P<era>{_alternatives(names['era'])})"
    raise ValueError(f"date pattern field {letters!r}: not one of the fields a date is read by (G y u Y M L d E c e)")


def _alternatives(names: dict[str, int]) -> str:
    return "|".join(map(regex.escape, sorted(names, key=len, reverse=True))) or "(?!)"


def _symbols(where: icu.Locale) -> Any:
    """ICU's date symbols of ``where`` in its own calendar (Thai: Buddhist eras)."""
    import icu  # noqa: PLC0415

    return icu.DateFormat.createDateInstance(icu.DateFormat.kFull, where).getDateFormatSymbols()


def _month_names(symbols: Any) -> Iterable[list[str]]:
    import icu  # noqa: PLC0415

    kinds = icu.DateFormatSymbols
    for context in (kinds.FORMAT, kinds.STANDALONE):
        for width in (kinds.WIDE, kinds.ABBREVIATED):
            yield [""] + list(symbols.getMonths(context, width))  # January is 1


def _weekday_names(symbols: Any) -> Iterable[list[str]]:
    import icu  # noqa: PLC0415

    kinds = icu.DateFormatSymbols
    for context in (kinds.FORMAT, kinds.STANDALONE):
        for width in (kinds.WIDE, kinds.ABBREVIATED):
            yield list(symbols.getWeekdays(context, width))  # Sunday is 1


def _names(lists: Iterable[list[str]], locale: str) -> dict[str, int]:
    """Each name (folded, also without its closing full stop) and its number, the first list's first."""
    found: dict[str, int] = {}
    for names in lists:
        for number, name in enumerate(names):
            for form in (_date_text(name, locale), _date_text(name, locale).rstrip(".")):
                if form:
                    found.setdefault(form, number)
    return found


def _dateutil_reading(text: str, locale: str) -> frozenset[DateParts]:
    """dateutil's reading, numeric dates in the locale's order (year first when the text starts with four
    digits), the locale's month names beside the English ones; empty when it reads none."""
    formats = locale_formats(locale)
    if _YEAR_FIRST.match(text):
        yearfirst, dayfirst = True, False
    else:
        yearfirst, dayfirst = formats.date_order == "ymd", formats.date_order == "dmy"
    reader = date_parser.parser(_dateutil_names(formats))
    try:
        first, second = (reader.parse(text, default=d, yearfirst=yearfirst, dayfirst=dayfirst) for d in _DATE_DEFAULTS)
    except (ValueError, OverflowError):
        return frozenset()
    parts = (a if a == b else None for a, b in ((first.year, second.year), (first.month, second.month),
                                                 (first.day, second.day)))
    return frozenset({DateParts(*parts)})


@lru_cache(maxsize=None)
def _dateutil_names(formats: LocaleFormats) -> date_parser.parserinfo:
    """dateutil's words for dates, with the locale's month names beside the English ones."""

    class LocaleDates(date_parser.parserinfo):
        MONTHS: Any = [(*english, *local) for english, local in zip(date_parser.parserinfo.MONTHS, formats.months,
                                                                       strict=True)]

    return LocaleDates()
