"""Number signs and digits, date order and month names per locale, as CLDR has them (tasks.metrics.locale_formats)."""

from __future__ import annotations

import pytest

from tasks.metrics.locale_formats import (
    NumberSymbols,
    date_order,
    fold,
    locale_formats,
    number_symbols,
    numbering_systems,
)


@pytest.mark.parametrize("locale, decimal, group, order", [
    ("en", ".", ",", "mdy"),  # 1,000.5 and 5/1/90 for the first of May (US English, MKQA's)
    ("de", ",", ".", "dmy"),  # 1.000,5 and 01.05.90
    ("fr", ",", " ", "dmy"),  # a narrow no-break space groups thousands (U+202F, a space once folded)
    ("ja", ".", ",", "ymd"),
    ("zh_cn", ".", ",", "ymd"),  # MKQA's code for Simplified Chinese
    ("zh_hk", ".", ",", "dmy"),  # Hong Kong writes day first
    ("xx", ".", ",", "ymd"),  # unknown: CLDR's root locale, whatever the machine's own locale is
])
def test_separators_and_date_order_come_from_cldr(locale: str, decimal: str, group: str, order: str) -> None:
    symbols = number_symbols(locale, numbering_systems(locale)[0])
    assert (symbols.decimal, symbols.group, locale_formats(locale).date_order) == (decimal, group, order)


@pytest.mark.parametrize("locale, systems", [
    ("en", ("latn",)), ("ar", ("latn", "arab")), ("km", ("latn", "khmr")), ("th", ("latn", "thai")),
    ("zh_cn", ("latn", "hanidec")),  # Chinese digits 〇一二…九 are one of Chinese's numbering systems
    ("ja", ("latn",)),  # Japanese's other systems spell numbers out (百二十三): not decimal digits
])
def test_a_locale_s_decimal_numbering_systems(locale: str, systems: tuple[str, ...]) -> None:
    assert numbering_systems(locale) == systems


def test_the_signs_depend_on_the_numbering_system_and_lose_their_direction_marks() -> None:
    # Khmer groups Latin digits with a comma, its own with a point; Arabic's own digits have their own signs.
    # CLDR wraps Arabic's percent and minus in bidirectional marks (U+200E, U+061C): folded away.
    assert number_symbols("km", "latn") == NumberSymbols(".", ",", "%", "-")
    assert number_symbols("km", "khmr") == NumberSymbols(",", ".", "%", "-")
    assert number_symbols("ar", "arab") == NumberSymbols("\u066b", "\u066c", "\u066a", "-")
    assert number_symbols("ar", "latn").percent == "%"
    assert number_symbols("sv", "latn").minus == "\u2212"  # Swedish writes a true minus sign
    assert fold("\u200fＡＢ\u061c") == "ab"  # NFKC (full width), case folded, no bidirectional controls


def test_month_names_are_lower_case_in_each_form() -> None:
    assert locale_formats("de").months[4] == ("mai",)
    # Russian: the genitive a date uses ("1 января") and the nominative of a month on its own ("январь")
    assert {"января", "январь", "янв"} <= set(locale_formats("ru").months[0])


@pytest.mark.parametrize("pattern, order", [("M/d/yy", "mdy"), ("dd.MM.yy", "dmy"), ("y. MM. dd.", "ymd"),
                                            ("d 'de' MMM 'de' y", "dmy")])
def test_date_order_of_a_pattern_skips_quoted_text(pattern: str, order: str) -> None:
    assert date_order(pattern) == order


def test_a_pattern_without_the_three_fields_is_refused() -> None:
    with pytest.raises(ValueError, match="'MM/yy'"):
        date_order("MM/yy")
