"""MKQA scoring in both modes: normalisation, EM/F1, the official threshold sweep, files and the CLI.

Every expected number is worked out by hand in the comments.  The official
mode must reproduce the official scorer's quirks; the improved mode must not.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.score_cli import score_app
from tasks.errors import ConfigError
from tasks.metrics.mkqa import score_files
from tasks.metrics.mkqa_data import GoldAnswer, GoldExample, Prediction, read_gold, read_predictions
from tasks.metrics.mkqa_improved import example_scores as improved_scores
from tasks.metrics.mkqa_improved import improved_tokens
from tasks.metrics.mkqa_improved import score_language as improved_language
from tasks.metrics.mkqa_official import official_tokens, score_language, tokenize_all

SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"


@pytest.mark.parametrize("text, lang, official, improved", [
    # ASCII punctuation goes in both modes; the guillemets only in the improved one; "the" is an article in both
    ("The «Velna»!", "en", ("«velna»",), ("velna",)),
    # the official French pattern has no closing word boundary: it cuts "la" off "lapin"
    ("lapin", "fr", ("pin",), ("lapin",)),
    # the official Arabic pattern removes every "ال", even inside a word; the improved mode only the prefix
    ("القمر حال", "ar", ("قمر", "ح"), ("قمر", "حال")),
    # characters as tokens in the official mode, words in the improved one
    ("维尔纳河", "zh_cn", ("维", "尔", "纳", "河"), ("维尔纳", "河")),
    # the ideographic comma is not ASCII punctuation
    ("東京、大阪", "ja", ("東", "京", "、", "大", "阪"), ("東京", "大阪")),
])
def test_normalisation_in_each_mode(text: str, lang: str, official: tuple, improved: tuple) -> None:
    assert official_tokens(text, lang) == official
    assert improved_tokens(text, lang) == improved


def test_a_language_s_strings_tokenised_together_equal_each_tokenised_alone() -> None:
    # Joining must not change what happens at a string's edges: Greek's final sigma is lower-cased by its
    # context ("ΟΔΟΣ" → "οδος" with a final ς), French's article pattern starts at a word boundary, and a
    # string that contains the joining character itself is still tokenised right.
    cases = {"el": ["ΟΔΟΣ", "ΣΟΦΙΑ ΚΑΙ ΛΟΓΟΣ", "Σ"], "fr": ["la Seine", "l'Orne!", "Lapin", "le\x00la"],
             "ja": ["東京 大阪", "カ、ナ"], "en": ["The «Velna»!", "", "an apple, the pear"]}
    for lang, texts in cases.items():
        together = tokenize_all(texts, lang)
        assert together == {text: official_tokens(text, lang) for text in texts if text}
    assert tokenize_all(["ΟΔΟΣ"], "el")["ΟΔΟΣ"] == ("οδος",)
    assert tokenize_all(["le\x00la", "la Seine"], "fr")["la Seine"] == ("seine",)


def _gold(example_id: str, texts: list[str | None], kind: str = "entity", aliases: tuple[str, ...] = (),
          lang: str = "en") -> GoldExample:
    answers = tuple(GoldAnswer(kind if text else "unanswerable", text, None, aliases) for text in texts)
    return GoldExample(example_id, "q", {lang: "q"}, {lang: answers})


def _sweep_case(order: list[str]) -> tuple[list[GoldExample], dict[str, Prediction]]:
    gold = [_gold("1", ["Velna"]), _gold("2", [None]), _gold("3", ["Tarsk"]), _gold("4", [None]),
            _gold("5", ["Velna river"])]
    predictions = {"1": Prediction("the Velna", None, -3.0), "2": Prediction("Orvik", None, -1.0),
                   "3": Prediction("Tarsk", None, -1.0), "4": Prediction(None, None, 2.0),
                   "5": Prediction("Velna", None, 5.0)}
    return gold, {i: predictions[i] for i in order}


def test_the_official_sweep_breaks_probability_ties_by_file_order() -> None:
    # Start: all abstain, score = 2 unanswerable, threshold 0.0.  By rising probability:
    #   order 1,2,3,4,5: e1 +1 → 3 (best, τ -3); e2 answered though unanswerable -1 → 2; e3 +1 → 3 (not better);
    #   e4 no text 0; e5 F1 2·(1·0.5)/(1.5) = 0.667 → 3.667 (better, τ 5).  Best 3.667/5 = 73.33, τ 5.
    gold, file_order = _sweep_case(["1", "2", "3", "4", "5"])
    first = score_language(gold, file_order, "en")
    assert (first["best_f1"], first["best_f1_thresh"]) == (73.33, 5.0)
    # at τ 5 nobody abstains (abstain iff p > 5): EM 1, 0 (answered an unanswerable), 1, 1 (no text), 0 → 60
    assert (first["best_em"], first["best_answerable_em"], first["best_unanswerable_em"]) == (60.0, 66.67, 50.0)
    assert first["best_answerable_f1"] == 88.89  # (1 + 1 + 0.667) / 3
    #   order 1,3,2,4,5: e1 → 3 (τ -3); e3 → 4 (τ -1); e2 → 3; e4 → 3; e5 → 3.667: best 4/5 = 80, τ -1
    swapped = score_language(*_sweep_case(["1", "3", "2", "4", "5"]), "en")
    assert (swapped["best_f1"], swapped["best_f1_thresh"]) == (80.0, -1.0)
    # at τ -1: e4 and e5 abstain; EM 1, 0, 1, 1 (abstains, unanswerable), 0 (abstains, answerable) → 60
    assert swapped["best_em"] == 60.0 and swapped["best_answerable_f1"] == 66.67


def test_grouped_ties_admit_a_tie_whole_whatever_the_order() -> None:
    # e2 and e3 tie at -1.  Grouped, the score is compared only after both: e1 → 3 (best, τ -3); e2 -1, e3 +1 →
    # 3 (not better); e4 → 3; e5 → 3.667 (best, τ 5): 73.33 in both orders — the file-order result of the order
    # that puts the answer to the unanswerable e2 first (the first case above), not the 80 of the other order.
    for order in (["1", "2", "3", "4", "5"], ["1", "3", "2", "4", "5"]):
        result = score_language(*_sweep_case(order), "en", ties="grouped")
        assert (result["best_f1"], result["best_f1_thresh"], result["best_em"]) == (73.33, 5.0, 60.0)


def test_grouped_ties_keep_best_f1_consistent_with_the_answers_given() -> None:
    # Two answers at probability 0, as the leaderboard gives them: a right one (e1) and one to an unanswerable
    # question (e2).  In file order e1, e2 the official sweep peaks between them (start 1, +1 → 2) and reports
    # best_f1 2/2 = 100, although at τ 0 both are given and EM is 1/2 = 50; in the order e2, e1 it reports 50.
    # Grouped, both orders give 50 (start 1; after the tie 1 + 1 - 1 = 1, not better).
    gold = [_gold("1", ["Velna"]), _gold("2", [None])]
    answers = {"1": Prediction("Velna", None, 0.0), "2": Prediction("Orvik", None, 0.0)}
    assert score_language(gold, answers, "en")["best_f1"] == 100.0
    for order in (["1", "2"], ["2", "1"]):
        result = score_language(gold, {i: answers[i] for i in order}, "en", ties="grouped")
        assert (result["best_f1"], result["best_em"]) == (50.0, 50.0)


def test_a_failed_example_scores_zero_even_where_the_sweep_starts() -> None:
    # e1 answered right, e2 (unanswerable) failed.  As a prediction with no text e2 would abstain: 2/2 = 100.
    # Failed, it is left out of the sweep and scores 0: start 0, e1 +1 → 1: best_f1 1/2 = 50, EM 50,
    # unanswerable EM 0.
    gold = [_gold("1", ["Velna"]), _gold("2", [None])]
    predictions = {"1": Prediction("Velna", None, 0.0), "2": Prediction(None, None, 1.0)}
    assert score_language(gold, predictions, "en")["best_f1"] == 100.0
    result = score_language(gold, predictions, "en", failed={"2"})
    assert (result["best_f1"], result["best_em"], result["best_unanswerable_em"]) == (50.0, 50.0, 0.0)


def test_the_official_threshold_starts_at_zero_whatever_the_probabilities() -> None:
    # nothing beats everyone abstaining (score 1 of 2): τ stays 0.0, although every probability is negative
    gold = [_gold("1", ["Velna"]), _gold("2", [None])]
    predictions = {"1": Prediction("Orvik", None, -2.0), "2": Prediction("", None, -1.0)}
    result = score_language(gold, predictions, "en")
    assert (result["best_f1"], result["best_f1_thresh"], result["best_em"]) == (50.0, 0.0, 50.0)


def test_aliases_count_and_the_binary_answer_wins_over_the_text() -> None:
    gold = [_gold("1", ["Petra Voss"], aliases=("Voss",)), _gold("2", ["yes"], kind="binary")]
    predictions = {"1": Prediction("voss", None, 0.0), "2": Prediction("no idea", "YES", 0.0)}
    result = score_language(gold, predictions, "en")
    assert result["best_em"] == 100.0 and result["best_f1"] == 100.0


@pytest.mark.parametrize("gold, prediction, expected", [
    (_gold("1", ["1,000 km"], kind="number_with_unit"), "1000 km", (1.0, 1.0)),
    (_gold("1", ["1 May 1990"], kind="date"), "May 1, 1990", (1.0, 1.0)),
    (_gold("1", ["1990"], kind="date"), "in 1990", (0.0, 2 / 3)),  # ("in", "1990") vs ("1990",): P ½, R 1
    (_gold("1", ["yes"], kind="binary", lang="de"), "Ja, das stimmt.", (1.0, 1.0)),
    (_gold("1", ["Velna"], lang="de"), "Ich weiß nicht.", (0.0, 0.0)),  # abstains on an answerable question
    (_gold("1", [None]), "I don't know", (1.0, 1.0)),  # abstains on an unanswerable one
    (_gold("1", [None]), "Paris", (0.0, 0.0)),
])
def test_improved_mode_matches_numbers_dates_yes_no_and_abstentions(gold: GoldExample, prediction: str,
                                                                      expected: tuple) -> None:
    lang = next(iter(gold.answers))
    em, f1, _ = improved_scores(Prediction(prediction, None, 0.0), gold, lang)
    assert (em, pytest.approx(f1)) == (expected[0], expected[1])


@pytest.mark.parametrize("gold, prediction, expected", [
    # English: the point is the decimal mark, the comma groups thousands
    (_gold("1", ["0.125"], kind="number"), "125", (0.0, 0.0)),  # ("0∙125",) vs ("125",): nothing in common
    (_gold("1", ["1,500"], kind="number"), "1.500", (0.0, 0.0)),  # 1500 vs 1.5
    (_gold("1", ["1000"], kind="number"), "1,000", (1.0, 1.0)),
    (_gold("1", ["3.5 km"], kind="number_with_unit"), "3,5 km", (1.0, 1.0)),  # "3,5" cannot group: a decimal
    # German: the other way round
    (_gold("1", ["0,125"], kind="number", lang="de"), "125", (0.0, 0.0)),
    (_gold("1", ["1.500"], kind="number", lang="de"), "1,500", (0.0, 0.0)),  # 1500 vs 1.5
    (_gold("1", ["1.000 km"], kind="number_with_unit", lang="de"), "1000 km", (1.0, 1.0)),
    (_gold("1", ["0,125"], kind="number", lang="de"), "0.125", (1.0, 1.0)),  # a leading 0 cannot group
    # French groups with a narrow no-break space and writes decimals with a comma
    (_gold("1", ["1\u202f000,5"], kind="number", lang="fr"), "1000.5", (1.0, 1.0)),
])
def test_improved_mode_reads_numbers_with_the_locale_s_separators(gold: GoldExample, prediction: str,
                                                                  expected: tuple) -> None:
    lang = next(iter(gold.answers))
    em, f1, _ = improved_scores(Prediction(prediction, None, 0.0), gold, lang)
    assert (em, pytest.approx(f1)) == expected


@pytest.mark.parametrize("gold, prediction, expected", [
    (_gold("1", ["May 1, 1990"], kind="date"), "05/01/1990", (1.0, 1.0)),  # en-US: month first
    (_gold("1", ["1 mai 1990"], kind="date", lang="fr"), "01/05/1990", (1.0, 1.0)),  # fr: day first
    # 05/01/1990 is the 5th of January in French: no date match; tokens ("5", "1", "1990") vs ("1", "mai",
    # "1990"): 2 in common, P = R = 2/3, F1 2/3
    (_gold("1", ["1 mai 1990"], kind="date", lang="fr"), "05/01/1990", (0.0, 2 / 3)),
    (_gold("1", ["1. Mai 1990"], kind="date", lang="de"), "01.05.1990", (1.0, 1.0)),  # German month names
    (_gold("1", ["1. Mai 1990"], kind="date", lang="de"), "1990-05-01", (1.0, 1.0)),  # ISO: year first anywhere
    (_gold("1", ["14 декабря 1993"], kind="date", lang="ru"), "14.12.1993", (1.0, 1.0)),
    (_gold("1", ["1990-05-01"], kind="date"), "May 1st, 1990", (1.0, 1.0)),  # an ordinal: no CLDR pattern, dateutil
    (_gold("1", ["7 March 2019"], kind="date", lang="th"), "7/3/2562", (1.0, 1.0)),  # a Buddhist year: 2562 - 543
    (_gold("1", ["2019-03-07"], kind="date"), "3/7/19", (1.0, 1.0)),  # a two-digit year: either century
    (_gold("1", ["1919-03-07"], kind="date"), "3/7/19", (1.0, 1.0)),
])
def test_improved_mode_reads_dates_in_the_locale_s_order(gold: GoldExample, prediction: str, expected: tuple) -> None:
    lang = next(iter(gold.answers))
    em, f1, _ = improved_scores(Prediction(prediction, None, 0.0), gold, lang)
    assert (em, pytest.approx(f1)) == expected


@pytest.mark.parametrize("lang, written, next_day", [
    ("ja", "2019年3月7日", "2019年3月8日"), ("zh_cn", "2019年3月7日", "2019年3月8日"),
    ("zh_hk", "2019年3月7日", "2019年3月8日"), ("zh_tw", "2019年3月7日", "2019年3月8日"),
    ("ko", "2019년 3월 7일", "2019년 3월 8일"), ("es", "7 de marzo de 2019", "8 de marzo de 2019"),
    ("pt", "7 de março de 2019", "8 de março de 2019"),
])
def test_improved_mode_reads_cjk_korean_and_iberian_long_dates(lang: str, written: str, next_day: str) -> None:
    # Three answers to a question whose gold is MKQA's "2019-03-07": in ISO (right), in the locale's long form
    # (right), the next day in that form (wrong): EM 2/3 = 66.67 (reading only the ISO one gives 33.33)
    gold = [_gold(str(i), ["2019-03-07"], kind="date", lang=lang) for i in range(3)]
    predictions = {"0": Prediction("2019-03-07"), "1": Prediction(written), "2": Prediction(next_day)}
    assert improved_language(gold, predictions, lang)["best_em"] == 66.67


@pytest.mark.parametrize("gold, prediction, lang", [
    ("1871", "1871年", "ja"), ("1871", "1871년", "ko"), ("1871", "1871 г.", "ru"), ("1871年", "1871", "zh_cn"),
    ("2019-03", "marzo de 2019", "es"),
])
def test_a_year_or_month_alone_matches_as_a_date(gold: str, prediction: str, lang: str) -> None:
    assert improved_scores(Prediction(prediction), _gold("1", [gold], kind="date", lang=lang), lang)[0] == 1.0


def test_khmer_reads_yes_no_and_numbers_before_its_characters() -> None:
    # yes "បាទ" and no "ទេ" are one word each; 1959 is another number than 1995 (one token each, nothing in
    # common: F1 0, not the 1.0 of four digits as a bag of characters); Khmer digits "១៩៩៥" are 1995; a polite
    # "ចាស" (yes) followed by more words still answers yes.  Per example EM (= F1): 1, 1, 0, 1, 1 → 80.0
    gold = [_gold("1", ["yes"], kind="binary", lang="km"), _gold("2", ["no"], kind="binary", lang="km"),
            _gold("3", ["1995"], kind="number", lang="km"), _gold("4", ["1995"], kind="number", lang="km"),
            _gold("5", ["yes"], kind="binary", lang="km")]
    predictions = {"1": Prediction("បាទ"), "2": Prediction("ទេ"), "3": Prediction("1959"), "4": Prediction("១៩៩៥"),
                   "5": Prediction("ចាស គឺជាការពិត")}
    result = improved_language(gold, predictions, "km")
    assert (result["best_em"], result["best_f1"]) == (80.0, 80.0)
    assert improved_tokens("ឆ្នាំ១៩៥៩", "km")[-1] == "1959"  # the year is one token after the word "year"


@pytest.mark.parametrize("lang, gold, prediction, expected", [
    # a decimal stays one token under jieba, fugashi and ICU's Thai word break: ("1.5", "km") vs ("5", "km")
    # have one token in common, P = R = 1/2, F1 1/2 (split into "1", "5", F1 would be 2·(1·⅔)/(1 + ⅔) = 0.8)
    ("zh_cn", "1.5公里", "5公里", (0.0, 0.5)), ("ja", "1.5キロ", "5キロ", (0.0, 0.5)),
    ("th", "1.5 กิโลเมตร", "5 กิโลเมตร", (0.0, 0.5)),
    ("zh_cn", "1959年", "1,959年", (1.0, 1.0)),  # grouped: one number, then jieba's "年"
    ("ar", "1995", "١٩٩٥", (1.0, 1.0)), ("th", "1995", "๑๙๙๕", (1.0, 1.0)), ("en", "1995", "१९९५", (1.0, 1.0)),
    ("ar", "1234.5", "١٬٢٣٤٫٥", (1.0, 1.0)),  # Arabic's own group and decimal signs
    ("km", "1234.5", "១.២៣៤,៥", (1.0, 1.0)),  # Khmer digits group with a point and mark decimals with a comma
    ("km", "1234.5", "1,234.5", (1.0, 1.0)),  # ... Latin digits in Khmer the other way round
    ("zh_cn", "2019", "二〇一九", (1.0, 1.0)),  # Chinese decimal digits, a run of them
    ("fr", "12%", "12 %", (1.0, 1.0)), ("tr", "12%", "%12", (1.0, 1.0)), ("ar", "12%", "١٢٪", (1.0, 1.0)),
    ("en", "12%", "13%", (0.0, 0.5)),  # ("12", "%") vs ("13", "%"): the sign in common, P = R = 1/2
    ("sv", "-5", "−5", (1.0, 1.0)), ("en", "-5", "5", (0.0, 0.0)),  # CLDR's minus sign; a sign changes the value
])
def test_improved_mode_reads_numbers_in_any_digits_before_segmenting(lang: str, gold: str, prediction: str,
                                                                      expected: tuple) -> None:
    em, f1, _ = improved_scores(Prediction(prediction), _gold("1", [gold], kind="number_with_unit", lang=lang), lang)
    assert (em, pytest.approx(f1)) == expected


@pytest.mark.parametrize("lang, answer, reads", [
    ("ja", "はい、そうです", "yes"), ("th", "ใช่ครับ", "yes"), ("th", "ไม่ใช่ครับ", "no"), ("zh_cn", "是的，北京", "yes"),
    ("km", "បាទ/ចាស", "yes"),
    # a yes/no word that only begins a longer word is not one: "Britain", "angel", "yesterday"
    ("zh_cn", "不列颠", None), ("km", "ទេវតា", None), ("en", "yesterday", None),
])
def test_yes_and_no_are_the_first_word_in_every_script(lang: str, answer: str, reads: str | None) -> None:
    for said in ("yes", "no"):
        em, _, _ = improved_scores(Prediction(answer), _gold("1", [said], kind="binary", lang=lang), lang)
        assert em == float(said == reads)


def test_chinese_digits_inside_a_word_stay_letters() -> None:
    # "统一" (unify) holds the digit 一 as a letter; a lone one or a run of two is a number
    assert improved_tokens("统一", "zh_cn") == ("统一",)
    assert improved_tokens("五", "zh_cn") == ("5",)


def test_ids_stay_exact_and_a_bad_line_is_named(tmp_path: Path) -> None:
    gold = read_gold(SAMPLE)
    assert gold[0].example_id == "-7312405518342157731"  # beyond float precision: kept digit for digit
    assert gold[1].answers["en"][0] == GoldAnswer("entity", "Petra Voss", "Q910008", ("Voss",))
    bad = tmp_path / "preds.jsonl"
    bad.write_text('{"example_id": 1, "prediction": "x"}\n{"example_id": 2.5, "prediction": "y"}\n')
    with pytest.raises(ConfigError, match=r"preds.jsonl line 2: example_id 2.5 is not an integer"):
        read_predictions(bad)
    broken = tmp_path / "mkqa.jsonl.gz"
    broken.write_bytes(gzip.compress(SAMPLE.read_bytes())[:200])
    with pytest.raises(ConfigError, match="mkqa.jsonl.gz"):
        read_gold(broken)


def _predictions(directory: Path, answers: dict[str, list[str | None]]) -> Path:
    directory.mkdir()
    ids = [example.example_id for example in read_gold(SAMPLE)]
    for lang, texts in answers.items():
        (directory / f"{lang}.jsonl").write_text("".join(
            json.dumps({"example_id": int(i), "prediction": t, "binary_answer": None, "no_answer_prob": 0.0}) + "\n"
            for i, t in zip(ids, texts, strict=True)))
    return directory


def test_the_score_command_prints_the_documented_json(tmp_path: Path) -> None:
    # the sample's 8 English questions: 412 km (alias "412 km"), Petra Voss, 1871, yes, Jonas Halvar, 11,
    # then an unanswerable and a long_answer one
    directory = _predictions(tmp_path / "preds", {"en": ["412 km", "Voss", "1871", "yes", "Halvar", "eleven", None,
                                                         "Because of glass"]})
    result = CliRunner().invoke(score_app, ["mkqa", "--gold", str(SAMPLE), "--predictions", str(directory),
                                            "--langs", "en", "--mode", "improved", "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)
    assert set(scores) == {"mode", "languages", "macro"} and scores["mode"] == "improved"
    en = scores["languages"]["en"]
    assert set(en) == {"best_em", "best_f1", "best_answerable_em", "best_answerable_f1", "best_unanswerable_em",
                       "best_f1_thresh"}
    # 6 answerable all right (aliases: "412 km", "Voss", "Halvar", "eleven"), the unanswerable one abstained,
    # the long_answer one answered: EM 7/8
    assert (en["best_em"], en["best_answerable_em"], en["best_unanswerable_em"]) == (87.5, 100.0, 50.0)
    assert scores["macro"]["best_em"] == 87.5 and en["best_f1_thresh"] is None


def test_missing_predictions_and_unknown_locales_are_refused(tmp_path: Path) -> None:
    directory = _predictions(tmp_path / "preds", {"en": ["x"] * 8})
    with pytest.raises(ConfigError, match="no predictions file for .*de.jsonl"):
        score_files(SAMPLE, directory, ["en", "de"], "official")
    with pytest.raises(ConfigError, match="not MKQA locales: xx"):
        score_files(SAMPLE, directory, ["xx"], "official")


@pytest.mark.skipif(not __import__("os").environ.get("MKQA_OFFICIAL_DIR"),
                    reason="set MKQA_OFFICIAL_DIR to a checkout of apple/ml-mkqa to compare with the official scorer")
def test_official_mode_equals_the_official_scorer_on_synthetic_files(tmp_path: Path) -> None:
    import importlib
    import os
    import sys

    from benchmarks.mkqa_scoring import synthetic_files
    from tasks.metrics.mkqa_data import MKQA_LANGUAGES

    sys.path.insert(0, os.environ["MKQA_OFFICIAL_DIR"])
    official = importlib.import_module("mkqa_eval")
    gold_path, predictions = synthetic_files(tmp_path, 300, seed=11)
    ours = score_files(gold_path, predictions, list(MKQA_LANGUAGES), "official")["languages"]
    annotations = official.read_annotations(str(gold_path))
    for lang in MKQA_LANGUAGES:
        theirs = official.evaluate(annotations[lang], official.read_predictions(str(predictions / f"{lang}.jsonl")),
                                   lang, print_metrics=False)
        assert {("best_f1_thresh" if k == "best_f1_threshold" else k): v for k, v in theirs.items()} == ours[lang]
