"""The released ECLeKTic file as a benchmark: the instances a built one has, with the file's own translations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.warehouse.db import Warehouse


def _line(q_id: object, source: str, texts: dict[str, tuple[str, str, str]], **extra: object) -> str:
    record = {"q_id": q_id, "original_lang": source, "title": f"Article {q_id}", "url": f"https://{source}.wikipedia.org/x",
              "content": texts[source][2], "question": texts[source][0], "answer": texts[source][1]}
    for lang, (question, answer, context) in texts.items():
        record |= {f"{lang}_q": question, f"{lang}_a": answer, f"{lang}_c": context}
    return json.dumps(record | extra, ensure_ascii=False)


VELNA = {"de": ("Wann wurde die Velna-Brücke eröffnet?", "1871", "Die Velna-Brücke wurde 1871 eröffnet."),
         "en": ("When did the Velna Bridge open?", "1871", "The Velna Bridge opened in 1871."),
         "ja": ("ヴェルナ橋はいつ開通しましたか？", "1871年", "ヴェルナ橋は1871年に開通した。")}
TARSK = {"ja": ("タルスク大聖堂を設計したのは誰ですか？", "マレン・トルク", "タルスク大聖堂はマレン・トルクが設計した。"),
         "en": ("Who designed the Tarsk Cathedral?", "Maren Tolk", "Tarsk Cathedral was designed by Maren Tolk."),
         "de": ("", "", "")}  # no German translation of this one


def _file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "eclektic_main.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_question_gets_the_source_closed_book_and_five_settings_per_translated_target(tmp_path: Path) -> None:
    source = _file(tmp_path, _line("q1", "de", VELNA), _line(2, "ja", TARSK))
    with Warehouse(tmp_path / "home") as wh:
        ref = import_dataset(wh, "eclektic", source, "ecl", None)
        rows = {(r["item_id"], r["setting"], r["lang"]): r for r in wh.query_dicts(
            "SELECT * FROM instances WHERE benchmark = 'ecl'")}
        items = wh.query("SELECT item_id, lang, context FROM qa_items WHERE benchmark = 'ecl' ORDER BY 1")
    settings = {"closed_book", "hint_general", "hint_source_lang", "hint_source_title", "open_book_source_context"}
    # q1 (source de): de closed book + 5 settings in each of en, ja; q2 (source ja): ja closed book + 5 in en only
    assert len(rows) == (1 + 2 * 5) + (1 + 5)
    assert {s for (item, s, lang) in rows if item == "q1" and lang == "en"} == settings
    assert not any(item == "2" and lang == "de" for item, _, lang in rows)
    assert "1 translations missing" in ref.message
    english = rows[("q1", "closed_book", "en")]
    assert (english["question"], english["answer"], english["source_lang"]) == (VELNA["en"][0], "1871", "de")
    assert english["judge_context"] == VELNA["en"][2]  # the judge reads the context in the question's language
    hint = json.loads(rows[("q1", "hint_source_title", "ja")]["prompt_hint"])
    assert hint == {"kind": "source_title", "source_lang": "de", "title": "Article q1"}
    [document] = json.loads(rows[("q1", "open_book_source_context", "en")]["documents"])
    assert document["text"] == VELNA["de"][2]  # the open book shows the source-language context
    assert items == [("2", "ja", TARSK["ja"][2]), ("q1", "de", VELNA["de"][2])]


def test_a_bad_line_is_named_and_nothing_is_imported(tmp_path: Path) -> None:
    source = _file(tmp_path, _line("q1", "de", VELNA), _line("q2", "ja", TARSK, content=None))
    with Warehouse(tmp_path / "home") as wh:
        with pytest.raises(ConfigError, match=r"eclektic_main.jsonl line 2: content must be a non-empty string"):
            import_dataset(wh, "eclektic", source, "ecl", None)
        assert wh.scalar("SELECT count(*) FROM instances") == 0
        assert wh.query("SELECT * FROM qa_benchmarks") == []


def test_chosen_languages_keep_only_their_questions_and_targets(tmp_path: Path) -> None:
    source = _file(tmp_path, _line("q1", "de", VELNA), _line("q2", "ja", TARSK))
    with Warehouse(tmp_path / "home") as wh:
        ref = import_dataset(wh, "eclektic", source, "ecl", ["de", "en"])
        langs = wh.query("SELECT DISTINCT item_id, lang FROM instances ORDER BY ALL")
        with pytest.raises(ConfigError, match="ko cannot be imported"):
            import_dataset(wh, "eclektic", source, "other", ["ko"])
    assert langs == [("q1", "de"), ("q1", "en")]  # q2's source, ja, was not chosen
    assert "1 questions from languages not chosen left out" in ref.message


def test_a_language_without_any_translation_is_not_listed_among_the_imported(tmp_path: Path) -> None:
    """The file has German keys, all empty: no German instance, so German is not a language of the benchmark, and
    the message names it as the chosen language that got nothing."""
    source = _file(tmp_path, _line(2, "ja", TARSK))
    with Warehouse(tmp_path / "home") as wh:
        ref = import_dataset(wh, "eclektic", source, "ecl", None)
        assert wh.query("SELECT langs FROM qa_benchmarks") == [(["en", "ja"],)]
        assert wh.query("SELECT DISTINCT lang FROM instances ORDER BY 1") == [("en",), ("ja",)]
    assert "instances in en, ja (nothing in de)" in ref.message
