"""The improved MKQA mode reads every date and number ICU writes for each of MKQA's 26 locales (generated, seeded).

The cases come from ICU, not from the scorer: for random dates and numbers,
ICU formats the value the way the locale writes it (its date formats and
skeleton patterns, its number, percent and native-digit formats), and the
scorer must match that text against the gold as MKQA publishes it, while
the neighbouring value written the same way must not match.  Scored through
the public ``example_scores``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal

import icu
import pytest

from tasks.metrics.mkqa_data import MKQA_LANGUAGES, GoldAnswer, GoldExample, Prediction
from tasks.metrics.mkqa_improved import example_scores

DATES_PER_LOCALE = 500
NUMBERS_PER_LOCALE = 500
STYLES = (icu.DateFormat.kShort, icu.DateFormat.kMedium, icu.DateFormat.kLong, icu.DateFormat.kFull)
# day, month (numeric, abbreviated, spelled out) and year, without a weekday, with a short one, with a long one
SKELETONS = tuple(f"y{month}d{weekday}" for month in ("M", "MMM", "MMMM") for weekday in ("", "E", "EEEE"))
FIRST, LAST = date(1000, 1, 1).toordinal(), date(2199, 12, 31).toordinal()


def _example(lang: str, kind: str, text: str) -> GoldExample:
    return GoldExample("1", "q", {lang: "q"}, {lang: (GoldAnswer(kind, text),)})


def _em(text: str, gold: GoldExample, lang: str) -> float:
    return example_scores(Prediction(text), gold, lang)[0]


def _date_formats(lang: str) -> list[icu.DateFormat]:
    """The locale's four date styles and its patterns for the skeletons, each in the locale's own calendar; the
    four styles again in each of its own other digits ("١٧\u200f/٣\u200f/٢٠١٩", "二〇一九年三月一七日")."""
    where = icu.Locale(lang)
    generator = icu.DateTimePatternGenerator.createInstance(where)
    return [*(icu.DateFormat.createDateInstance(style, where) for style in STYLES),
            *(icu.SimpleDateFormat(generator.getBestPattern(skeleton), where) for skeleton in SKELETONS),
            *(icu.DateFormat.createDateInstance(style, other) for other in _native_digits(lang) for style in STYLES)]


def _random_day(rng: random.Random) -> date:
    """A day of 1000–2199, outside 1582 (ICU's calendar leaves the Julian one in October 1582: ten days of that
    year do not exist there)."""
    while (day := date.fromordinal(rng.randint(FIRST, LAST))).year == 1582:
        pass
    return day


def _instant(day: date) -> float:
    """ICU's time of noon on ``day``, its fields set as they are written (ICU's Gregorian calendar is Julian
    before 1582, but sets and formats the same fields)."""
    calendar = icu.GregorianCalendar()
    calendar.clear()
    calendar.set(day.year, day.month - 1, day.day, 12, 0, 0)
    return calendar.getTime()


@pytest.mark.parametrize("lang", MKQA_LANGUAGES)
def test_every_date_format_of_the_locale_matches_the_gold_date(lang: str,
                                                              generated_cases: Callable[[int], None]) -> None:
    rng = random.Random(f"dates-{lang}")
    formats, failures, cases = _date_formats(lang), [], 0
    year_format = icu.SimpleDateFormat(icu.DateTimePatternGenerator.createInstance(icu.Locale(lang))
                                       .getBestPattern("y"), icu.Locale(lang))
    for _ in range(DATES_PER_LOCALE):
        day = _random_day(rng)
        gold = _example(lang, "date", day.isoformat())  # MKQA's release format: "2019-03-07"
        year_gold = _example(lang, "date", str(day.year))  # a date answer that is a year
        here, after = _instant(day), _instant(day + timedelta(days=1))
        written = {(fmt.format(here), fmt.format(after)) for fmt in formats}
        for right, wrong in written:
            failures += [f"{right!r} ≠ {day}"] * (_em(right, gold, lang) != 1.0)
            failures += [f"{wrong!r} = {day}"] * (_em(wrong, gold, lang) != 0.0)
        year, next_year = year_format.format(here), year_format.format(_instant(date(day.year + 1, 1, 1)))
        failures += [f"{year!r} ≠ {day.year}"] * (_em(year, year_gold, lang) != 1.0)
        failures += [f"{next_year!r} = {day.year}"] * (_em(next_year, year_gold, lang) != 0.0)
        cases += 2 * len(written) + 2
    generated_cases(cases)
    assert not failures, f"{lang}: {len(failures)} of {cases} cases wrong, e.g. {failures[:8]}"


def _native_digits(lang: str) -> list[icu.Locale]:
    """The locale with each numbering system of its own whose digits are not the default's (``ar@numbers=arab``,
    ``km@numbers=khmr``, ``zh_CN@numbers=hanidec``); systems that spell numbers out are left out."""
    default = icu.NumberingSystem.createInstance(icu.Locale(lang)).getName()
    names = [icu.NumberingSystem.createInstance(icu.Locale(f"{lang}@numbers={keyword}"))
             for keyword in ("native", "traditional", "finance")]
    return [icu.Locale(f"{lang}@numbers={name}") for name in dict.fromkeys(
        system.getName() for system in names if not system.isAlgorithmic() and system.getName() != default)]


def _number_formats(lang: str) -> list[tuple[str, icu.Locale]]:
    """The locale and the locale in each of its own other digits, by name."""
    return [(where.getName(), where) for where in (icu.Locale(lang), *_native_digits(lang))]


def _random_value(rng: random.Random) -> tuple[Decimal, int, bool]:
    """A value, its number of decimals and whether it is a percentage: integers of 1–10 digits (a tenth of
    them negative), decimals with 1–3 decimals, percentages with 0–1."""
    kind = rng.choice(("integer", "decimal", "percent"))
    if kind == "integer":
        return Decimal(rng.randrange(10 ** rng.randint(1, 10))) * (-1 if rng.random() < 0.1 else 1), 0, False
    places = rng.randint(1, 3) if kind == "decimal" else rng.randint(0, 1)
    return Decimal(rng.randrange(1, 10 ** rng.randint(2, 8))).scaleb(-places), places, kind == "percent"


@pytest.mark.parametrize("lang", MKQA_LANGUAGES)
def test_every_number_format_of_the_locale_matches_the_gold_number(lang: str,
                                                                  generated_cases: Callable[[int], None]) -> None:
    rng = random.Random(f"numbers-{lang}")
    decimal = icu.DecimalFormatSymbols(icu.Locale(lang)).getSymbol(icu.DecimalFormatSymbols.kDecimalSeparatorSymbol)
    formats = _number_formats(lang)
    failures, cases = [], 0
    for _ in range(NUMBERS_PER_LOCALE):
        value, places, percent = _random_value(rng)
        step = Decimal(1).scaleb(-places)
        # the gold as the locale writes a number plainly (its decimal mark, no grouping), "%" for a percentage
        gold = _example(lang, "number", f"{value:f}".replace(".", decimal) + "%" * percent)
        for name, where in formats:
            number = (icu.NumberFormat.createPercentInstance if percent else icu.NumberFormat.createInstance)(where)
            number.setMinimumFractionDigits(places)
            number.setMaximumFractionDigits(places)
            scale = Decimal("0.01") if percent else Decimal(1)
            right, wrong = (number.format(float(v * scale)) for v in (value, value + step))
            failures += [f"{name}: {right!r} ≠ {gold.answers[lang][0].text}"] * (_em(right, gold, lang) != 1.0)
            failures += [f"{name}: {wrong!r} = {gold.answers[lang][0].text}"] * (_em(wrong, gold, lang) != 0.0)
            cases += 2
    generated_cases(cases)
    assert not failures, f"{lang}: {len(failures)} of {cases} cases wrong, e.g. {failures[:8]}"
