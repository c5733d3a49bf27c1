"""Writing systems from Unicode and the language table: a text's letters by script, the scripts a language owns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from tasks.errors import ConfigError
from tasks.text.scripts import language_scripts, letter_scripts, likeliest_language, own_scripts


def test_letters_are_counted_by_their_unicode_script() -> None:
    # 東 京: Han; タ ワ: Katakana; ー (U+30FC) is Common, used by both kana: not counted
    assert letter_scripts("東京タワー") == Counter({"Hani": 2, "Kana": 2})
    # digits, signs and spaces are no letters; a Devanagari vowel sign is a mark, not a letter (ह, द)
    assert letter_scripts("2024 — 42 % !") == Counter()
    assert letter_scripts("हिंदी २०२४") == Counter({"Deva": 2})
    assert letter_scripts("Москва, Berlin") == Counter({"Cyrl": 6, "Latn": 6})


def test_a_language_s_scripts_come_from_its_table_row_and_combined_codes_are_expanded() -> None:
    assert language_scripts("zh_tw") == {"Hani"}  # an MKQA locale: Chinese's row, Hans, i.e. Han
    assert language_scripts("ja") == {"Hani", "Hira", "Kana"}  # Jpan
    assert language_scripts("ko") == {"Hang", "Hani"}  # Kore
    # owned: written by no other language of the table (Han is Chinese, Japanese and Korean; Greek is Pontic too)
    assert (own_scripts("ja"), own_scripts("ko"), own_scripts("zh"), own_scripts("el"), own_scripts("th")) == (
        {"Hira", "Kana"}, {"Hang"}, frozenset(), frozenset(), {"Thai"})


def test_the_likeliest_language_of_a_script_is_cldr_s() -> None:
    assert [likeliest_language(script) for script in ("Latn", "Cyrl", "Hang", "Hira", None)] == [
        "en", "ru", "ko", "ja", None]


def test_a_table_script_unicode_does_not_know_is_an_error_naming_the_language(
        language_rows: Callable[[str], None]) -> None:
    language_rows("xqa,Private test language,Qaaa")
    with pytest.raises(ConfigError, match=r"language 'xqa': script 'Qaaa' is not a Unicode script"):
        language_scripts("xqa")
