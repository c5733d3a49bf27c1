"""XRAG's language rule on the leaderboard, for languages lingua has no model for, for gold names kept in English,
and for abstentions: the stored reading of each response (as inference stores it) through the scorer."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

import pytest

from tasks.inference.language import response_language
from tasks.metrics.leaderboard import ScoringConfig, score_model
from tasks.warehouse.db import Warehouse

SETTING = "multilingual_retrieval"


def _scores(tmp_path: Path, lang: str, answers: dict[str, tuple[str, str]]) -> dict[str, tuple]:
    """Score model ``m`` on one XRAG question per entry (gold answer, given answer), every answer judged correct."""
    with Warehouse(tmp_path / "home") as wh:
        with wh.transaction() as cur:
            cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', ?], 'g', '{}', now())", [lang])
            for item, (gold, given) in answers.items():
                instance = f"{item}:{SETTING}:{lang}"
                cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question,"
                            " answer, source_lang, documents, seed, fingerprint) VALUES ('x', ?, ?, 'xrag', ?, ?, 'Q?',"
                            " ?, 'en', '[]', 0, 'fp')", [instance, item, SETTING, lang, gold])
                language = astuple(response_language(given, lang))
                cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer,"
                            " citations, template, fingerprint, language_status, detected_lang, target_prob,"
                            " english_prob, switched_share) VALUES ('x', ?, 'm', ?, ?, 'ok', ?, [], 't', 'fp', ?, ?, ?,"
                            " ?, ?)", [instance, SETTING, lang, given, *language])
                cur.execute("INSERT INTO judgements (benchmark, instance_id, model, judge, kind, verdict, status,"
                            " fingerprint) VALUES ('x', ?, 'm', 'j', 'correct', 'yes', 'ok', 'fp')", [instance])
        score_model(wh, "x", "xrag", "m", ["j"], ScoringConfig(resamples=50), "fp")
        return {metric: tuple(rest) for metric, *rest in wh.query(
            "SELECT metric, value, n FROM leaderboard WHERE lang = ? AND subset = 'all'", [lang])}


def test_a_latin_answer_to_a_khmer_question_is_wrong_language(tmp_path: Path) -> None:
    scores = _scores(tmp_path, "km", {
        "q1": ("ប្រាសាទអង្គរវត្ត", "Angkor"),  # no Khmer letter: wrong language (lingua has no Khmer model)
        "q2": ("ភ្នំពេញ", "ភ្នំពេញ"),
        "q3": ("ទន្លេមេគង្គ", "ទន្លេមេគង្គហូរកាត់ប្រទេសកម្ពុជា"),
    })
    # all three judged correct; Angkor is in the wrong language: 2 of 3 (main scored 100)
    assert scores["accuracy"] == (pytest.approx(200 / 3), 3)
    assert scores["wrong_language"] == (pytest.approx(100 / 3), 3)


def test_an_answer_that_is_the_gold_name_kept_in_english_is_never_wrong_language(tmp_path: Path) -> None:
    scores = _scores(tmp_path, "zh", {
        "q1": ("Port Ashby", "Port Ashby"),  # the translation kept the name: the gold answer itself
        "q2": ("1868年", "In 1868, the Pellow Tunnel opened."),  # an English sentence: wrong
    })
    assert scores["accuracy"] == (pytest.approx(50.0), 2)
    assert scores["wrong_language"] == (pytest.approx(50.0), 2)


def test_an_abstention_is_counted_apart_never_as_wrong_language(tmp_path: Path) -> None:
    scores = _scores(tmp_path, "de", {"q1": ("Die Velna", "I don't know."), "q2": ("Die Velna", "None"),
                                      "q3": ("1871", "Die Brücke wurde 1871 eröffnet.")})
    # the two declines (in English) are abstentions: 2 of 3 answered, none wrong-language; they are incorrect
    assert scores["abstained"] == (pytest.approx(200 / 3), 3)
    assert scores["wrong_language"] == (0.0, 3)
    assert scores["accuracy"] == (pytest.approx(100 / 3), 3)
