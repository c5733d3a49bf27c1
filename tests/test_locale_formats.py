"""Number separators, date order and month names per locale, as CLDR has them (tasks.metrics.locale_formats)."""

from __future__ import annotations

import pytest

from tasks.metrics.locale_formats import date_order, locale_formats


@pytest.mark.parametrize("locale, decimal, group, order", [
    ("en", ".", ",", "mdy"),  # 1,000.5 and 5/1/90 for the first of May (US English, MKQA's)
    ("de", ",", ".", "dmy"),  # 1.000,5 and 01.05.90
    ("fr", ",", "\u202f", "dmy"),  # a narrow no-break space groups thousands
    ("ja", ".", ",", "ymd"),
    ("zh_cn", ".", ",", "ymd"),  # MKQA's code for Simplified Chinese
    ("zh_hk", ".", ",", "dmy"),  # Hong Kong writes day first
    ("xx", ".", ",", "ymd"),  # unknown: CLDR's root locale, whatever the machine's own locale is
])
def test_separators_and_date_order_come_from_cldr(locale: str, decimal: str, group: str, order: str) -> None:
    formats = locale_formats(locale)
    assert (formats.decimal, formats.group, formats.date_order) == (decimal, group, order)


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
