"""The language of a response: lingua's target/English probabilities, code-switching by sentence, unsupported codes,
and short answers by their script."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tasks.inference.language import ResponseLanguage, response_language


def test_an_answer_in_the_question_language_with_one_english_sentence_is_one_third_switched() -> None:
    reply = ("Der Rhein fließt durch viele Länder in Europa. It is a very long river with many bridges. "
             "Er mündet bei Rotterdam in die Nordsee.")
    found = response_language(reply, "de")
    assert found.status == "ok" and found.detected == "de"
    assert found.switched_share == pytest.approx(1 / 3)  # 3 sentences, the middle one English
    assert found.target_prob > 0.5 > found.english_prob


def test_an_english_answer_to_a_german_question_is_detected_as_english() -> None:
    found = response_language("The capital is Berlin, which has been the seat of government since 1999 [3].", "de")
    assert found.detected == "en"
    assert found.english_prob > 0.5 > found.target_prob
    assert found.switched_share == 1.0


def test_unspaced_script_switching_into_english_splits_at_the_english_full_stop() -> None:
    reply = "東京は日本の首都です。It has a population of about fourteen million people. 人口は約千四百万人です。"
    found = response_language(reply, "ja")
    assert found.detected == "ja"
    assert found.switched_share == pytest.approx(1 / 3)


def test_citations_are_not_text() -> None:
    # without stripping, "[doc-en-7]" brackets would add Latin letters to a Chinese answer
    found = response_language("长江是中国最长的河流，全长约六千三百公里。[doc-en-7][doc-en-8]", "zh")
    assert found.detected == "zh" and found.switched_share == 0.0


def test_a_language_lingua_does_not_know_is_checked_by_script_without_probabilities() -> None:
    # Khmer is not among lingua's 75 languages: placed by script (only Khmer is written in it), no probability at all
    assert response_language("ព្រះរាជាណាចក្រកម្ពុជាមានរាជធានីភ្នំពេញ", "km") == ResponseLanguage("ok", "km")
    # a Latin name or sentence to a Khmer or Amharic question: no letter in the question's script, so not in it
    assert response_language("Angkor", "km") == ResponseLanguage("ok", "en")
    assert response_language("The capital of Ethiopia is Addis Ababa.", "am") == ResponseLanguage("ok", "en")
    # Ethiopic is Tigrinya's too, and lingua has no model for either: the language rule cannot tell
    assert response_language("አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት", "am") == ResponseLanguage("unchecked")


@pytest.mark.parametrize("reply, lang, detected", [
    ("Beijing", "zh", "en"),  # no Han: not Chinese; CLDR's likeliest language of the Latin script
    ("Beijing [3]", "ja", "en"),  # the citation is not text
    ("Paris", "ar", "en"),
    ("Москва", "zh_tw", "ru"),  # Cyrillic: CLDR's Russian
    ("Seoul", "ko", "en"),
    ("서울", "ko", "ko"),  # Hangul: only Korean is written in it
    ("東京タワー", "ja", "ja"),  # katakana: only Japanese
    ("とうきょう", "ja", "ja"),
    ("กรุงเทพ", "th", "th"),  # Thai script: only Thai (6 letters and a vowel sign)
])
def test_a_short_answer_is_placed_by_its_script(reply: str, lang: str, detected: str) -> None:
    found = response_language(reply, lang)
    assert (found.status, found.detected) == ("ok", detected)
    # lingua tells its candidates apart by script too: sure of the target, or sure it is not the target
    assert found.target_prob == (1.0 if detected == lang else 0.0)
    assert found.switched_share is None  # no sentence long enough to place


@pytest.mark.parametrize("reply, lang", [
    ("Berlin. [2]", "de"),  # Latin: German, English, ...
    ("1999", "en"),  # no letters at all
    ("42 %", "zh"),
    ("北京", "zh"),  # Han is Japanese and Korean too
    ("2024年", "zh"),
    ("東京", "ja"),
    ("بغداد", "ar"),  # Persian, Urdu ... are written in Arabic script
])
def test_a_short_answer_its_script_cannot_place_is_unchecked(reply: str, lang: str) -> None:
    assert response_language(reply, lang) == ResponseLanguage("unchecked")


def test_which_scripts_a_language_owns_is_read_from_the_language_table(language_rows: Callable[[str], None]) -> None:
    language_rows("xko,Hangul test language,Kore")
    # another language written in Hangul: a two-letter Hangul answer no longer shows Korean
    assert response_language("서울", "ko") == ResponseLanguage("unchecked")


@pytest.mark.parametrize("locale, reply", [
    ("zh_tw", "台北是臺灣最大的城市之一，也是政府所在地。"),  # MKQA's locales narrow Chinese by region
    ("zh-Hans", "长江是中国最长的河流，全长约六千三百公里。"),  # a BCP 47 script subtag
    ("no", "Oslo er hovedstaden i Norge og landets største by."),  # MKQA's and Wikipedia's Norwegian: Bokmål
    ("da", "København er hovedstaden i Danmark og landets største by."),  # a language outside the rules table
])
def test_locales_and_languages_outside_the_rules_table_are_detected_as_themselves(locale: str, reply: str) -> None:
    found = response_language(reply, locale)
    assert found.status == "ok" and found.switched_share == 0.0
    assert found.target_prob > 0.5 > found.english_prob


def test_a_subtag_that_names_another_language_is_never_taken_for_its_neighbour() -> None:
    cantonese = "粵語係香港同澳門嘅主要語言之一。"
    # Cantonese: Han, which other languages share, and no lingua model: unchecked, never read as Chinese
    assert response_language(cantonese, "zh-yue") == ResponseLanguage("unchecked")
    # Min Nan's wiki is written in Latin letters: a Han answer has none of them (CLDR's likeliest for Han: zh)
    assert response_language(cantonese, "zh-min-nan") == ResponseLanguage("ok", "zh")
    assert response_language(cantonese, "xx") == ResponseLanguage("unsupported")  # a code nothing knows


def _letters_of(script: str, count: int) -> str:
    """The first ``count`` letters ICU's Unicode data assigns to ``script`` (a source apart from the ``regex``
    module the language rule reads scripts with)."""
    import icu

    letters = list(itertools.islice(iter(icu.UnicodeSet(f"[[:Script={script}:]&[:L:]]")), count))
    assert len(letters) == count, f"Unicode has fewer than {count} letters in {script}"
    return "".join(letters)


#: Scripts of different families an answer may be written in, tried in order until one is not the language's own.
FOREIGN = ("Latn", "Cyrl", "Arab", "Hani", "Deva", "Grek")


def test_every_language_of_the_table_refuses_an_answer_in_another_script(generated_cases: Callable[[int], None]) -> None:
    from tasks.inference.language import target_code
    from tasks.text.languages import all_rules
    from tasks.text.scripts import language_scripts

    words = {script: (_letters_of(script, 3), " ".join([_letters_of(script, 6)] * 3)) for script in FOREIGN}
    cases, wrong = 0, []
    for lang in sorted(all_rules()):
        own = language_scripts(lang)
        foreign = [script for script in FOREIGN if script not in own][:2]
        for script in foreign:
            for answer in words[script]:  # a short name and a long sentence
                found = response_language(answer, lang)
                cases += 1
                if found.status != "ok" or found.detected == target_code(lang):
                    wrong.append((lang, script, answer, found))
    assert not wrong, wrong[:5]
    assert cases >= 4 * 300  # two scripts, two lengths, every one of the table's languages
    generated_cases(cases)
