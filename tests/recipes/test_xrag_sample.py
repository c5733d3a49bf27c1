"""The bundled XRAG-format sample: the questions written for the sample world, laid out as XRAG's release is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.sample.xrag_sample import write_xrag_sample

ASKED = {lang: {"question": "?", "answer": "!"} for lang in ("en", "de", "fr")}


def _questions(tmp_path: Path, *entries: dict) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(json.dumps({"questions": list(entries)}))  # JSON is YAML
    return path


def test_each_question_becomes_one_line_per_language_with_its_articles_in_the_setting_s_languages(
        tmp_path: Path) -> None:
    entry = {"id": "q", "type": "comparison", "support": ["Velna", "Mirra"], "distractors": ["Tarsk", "Orvik"],
             **ASKED, "de": {"question": "Welcher ist länger?", "answer": "Die Velna."}}
    out = write_xrag_sample(tmp_path / "out.jsonl", questions_file=_questions(tmp_path, entry))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["id"], line["language"], line["setting"]) for line in lines] == [
        ("q-de", "de", "multilingual_retrieval"), ("q-fr", "fr", "multilingual_retrieval")]
    de = lines[0]
    assert (de["question"], de["answer"], de["en_question"], de["q_type"]) == (
        "Welcher ist länger?", "Die Velna.", "?", "comparison")
    # supporting: the first article in the question's language, the second in English; then one distractor in each
    assert de["is_support"] == [1, 1, 0, 0] and sorted(de["article_order"]) == [0, 1, 2, 3]
    assert de["articles"][0].startswith("Die Velna ist mit 412 Kilometern Länge")  # wikitext made plain text
    assert de["articles"][1].startswith("The Mirra is a river of the Kelda region")
    assert de["articles"][2].startswith("Tarsk ist mit rund 184.000 Einwohnern")
    assert de["articles"][3].startswith("Orvik is a port city")


@pytest.mark.parametrize(("entries", "message"), [
    ([{"id": "lost", "type": "comparison", "support": ["Velna", "Atlantis"], "distractors": ["Mirra", "Tarsk"],
       **ASKED}], r"question 'lost' \(de\) needs articles the sample lacks: 'Atlantis' in en"),
    ([{"id": "q", "type": "trivia", "support": ["Velna", "Mirra"], "distractors": ["Tarsk", "Orvik"], **ASKED}],
     r"questions\.0\.type: Input should be 'aggregation', 'comparison', 'multihop' or 'set'"),
    ([{"id": "q", "type": "set", "support": ["Velna", "Mirra"], "distractors": ["Tarsk", "Orvik"], **ASKED}] * 2,
     r"questions\.1: id 'q' is used twice"),
])
def test_a_bad_question_is_named_with_what_is_wrong(tmp_path: Path, entries: list[dict], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        write_xrag_sample(tmp_path / "out.jsonl", questions_file=_questions(tmp_path, *entries))
    assert not (tmp_path / "out.jsonl").exists()
