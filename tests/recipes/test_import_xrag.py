"""The released XRAG file as a benchmark: settings, the English baseline, documents and question types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.warehouse.db import Warehouse

ENGLISH_ARTICLES = [
    "The Velna Bridge was opened in 1871 after nine years of construction by the river authority.",
    "Maren Tolk designed the cathedral of Tarsk, which was finished in the spring of 1902.",
    "The harbour of Orvik handles most of the grain shipped from the northern provinces.",
    "A new railway line now connects the two largest cities of the valley in under an hour.",
]
CHINESE_ARTICLE = "维尔纳桥于1871年开通，由河道管理局历时九年建成，是该地区最古老的石桥之一。"


def _line(identifier: object, lang: str, articles: list[str], **extra: object) -> str:
    record = {"id": identifier, "language": lang, "question": f"Frage {identifier}?", "answer": "1871",
              "en_question": f"Question {identifier}?", "en_answer": "1871", "q_type": "comparison",
              "a_type": "original", "crossdoc_type": 1, "articles": articles,
              "is_support": [1, 1] + [0] * (len(articles) - 2), "dates": ["2024-05-01"] * len(articles)}
    return json.dumps(record | extra, ensure_ascii=False)


def _file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "xrag.dev.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_settings_come_from_the_articles_languages_and_monolingual_lines_get_an_english_instance(tmp_path: Path) -> None:
    source = _file(tmp_path, _line(1, "de", ENGLISH_ARTICLES),
                   _line("z2", "zh", [CHINESE_ARTICLE, *ENGLISH_ARTICLES[1:]], q_type="multihop",
                         article_order=[3, 0, 2, 1]))
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "xrag", source, "x", None)
        rows = {(r["item_id"], r["setting"], r["lang"]): r for r in wh.query_dicts("SELECT * FROM instances")}
        qtypes = dict(wh.query("SELECT item_id, qtype FROM qa_items WHERE benchmark = 'x'"))
    # de with English articles only: monolingual retrieval, in de and (the English version) in en
    assert set(rows) == {("1", "monolingual_retrieval", "de"), ("1", "monolingual_retrieval", "en"),
                         ("z2", "multilingual_retrieval", "zh")}
    assert rows[("1", "monolingual_retrieval", "en")]["question"] == "Question 1?"
    assert qtypes == {"1": "comparison", "z2": "multihop"}
    documents = json.loads(rows[("z2", "multilingual_retrieval", "zh")]["documents"])
    # shown in article_order; the supporting articles are the first two of the file
    assert [d["text"] for d in documents] == [ENGLISH_ARTICLES[3], CHINESE_ARTICLE, ENGLISH_ARTICLES[2],
                                              ENGLISH_ARTICLES[1]]
    assert [d["role"] for d in documents] == ["distractor", "support", "distractor", "support"]


def test_an_explicit_setting_field_wins_and_languages_can_be_chosen(tmp_path: Path) -> None:
    source = _file(tmp_path, _line(1, "de", ENGLISH_ARTICLES, setting="multilingual"), _line(2, "es", ENGLISH_ARTICLES))
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "xrag", source, "x", ["de"])
        assert wh.query("SELECT item_id, setting, lang FROM instances") == [("1", "multilingual_retrieval", "de")]


def test_a_bad_line_is_named_and_nothing_is_imported(tmp_path: Path) -> None:
    source = _file(tmp_path, _line(1, "de", ENGLISH_ARTICLES), _line(2, "de", ENGLISH_ARTICLES, q_type="riddle"),
                   _line(3, "de", ENGLISH_ARTICLES, is_support=[1, 0]))
    with Warehouse(tmp_path / "home") as wh:
        with pytest.raises(ConfigError, match=r"xrag.dev.jsonl line 2: q_type 'riddle' is not one of"):
            import_dataset(wh, "xrag", source, "x", None)
        assert wh.scalar("SELECT count(*) FROM instances") == 0
    source = _file(tmp_path, _line(1, "de", ENGLISH_ARTICLES), _line(3, "de", ENGLISH_ARTICLES, is_support=[1, 0]))
    with Warehouse(tmp_path / "home") as wh, pytest.raises(ConfigError, match="line 2: is_support must be a 0/1 list"):
        import_dataset(wh, "xrag", source, "x", None)


def test_an_article_order_that_is_not_a_permutation_is_ignored(tmp_path: Path) -> None:
    source = _file(tmp_path, _line(1, "de", ENGLISH_ARTICLES, article_order=[5, 1, 9, 2]))
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "xrag", source, "x", None)
        documents = json.loads(wh.scalar("SELECT documents FROM instances WHERE lang = 'de'"))
    assert [d["text"] for d in documents] == ENGLISH_ARTICLES  # as listed


def test_an_english_question_released_with_several_languages_is_one_english_instance(tmp_path: Path) -> None:
    # One question released in de, es and ar (three lines, as the release has them), each carrying the same
    # English version over the same English articles — the ar line lists them in another order.  A fourth
    # question, in de only, has its own English version.
    shuffled = [ENGLISH_ARTICLES[n] for n in (2, 0, 3, 1)]
    source = _file(tmp_path, _line("1-de", "de", ENGLISH_ARTICLES, en_question="Question 1?"),
                   _line("1-es", "es", ENGLISH_ARTICLES, en_question="Question 1?"),
                   _line("1-ar", "ar", shuffled, en_question="Question 1?", is_support=[0, 1, 0, 1]),
                   _line("2-de", "de", ENGLISH_ARTICLES, en_question="Question 2?"))
    with Warehouse(tmp_path / "home") as wh:
        ref = import_dataset(wh, "xrag", source, "x", None)
        english = wh.query("SELECT item_id, question FROM instances WHERE lang = 'en' ORDER BY ALL")
        languages = wh.query("SELECT lang, count(*) FROM instances WHERE lang != 'en' GROUP BY lang ORDER BY lang")
    # 3 + 1 lines: 4 instances in their languages, and 2 English ones (not 4): question 1 from its first line
    assert english == [("1-de", "Question 1?"), ("2-de", "Question 2?")]
    assert languages == [("ar", 1), ("de", 2), ("es", 1)]
    assert "2 repeated English question(s) made once" in ref.message


def test_the_same_english_question_over_other_articles_is_another_instance(tmp_path: Path) -> None:
    source = _file(tmp_path, _line("1-de", "de", ENGLISH_ARTICLES, en_question="Question 1?"),
                   _line("1-es", "es", ENGLISH_ARTICLES[:3], en_question="Question 1?"))
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "xrag", source, "x", ["en"])
        assert wh.query("SELECT item_id FROM instances ORDER BY ALL") == [("1-de",), ("1-es",)]


@pytest.mark.usefixtures("prefect_api")
def test_the_import_command_lists_only_the_languages_it_created(tmp_path: Path) -> None:
    """Multilingual-retrieval lines carry an English version too, but XRAG asks it only in monolingual retrieval: no
    English instance is made, so English is neither listed nor recorded, and cannot be chosen."""
    from typer.testing import CliRunner

    from flows.cli import app

    source = _file(tmp_path, _line(1, "zh", [CHINESE_ARTICLE, *ENGLISH_ARTICLES[1:]]),
                   _line(2, "de", ENGLISH_ARTICLES, setting="multilingual"))
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["--home", str(home), "import", "xrag", "--source", str(source)])
    assert result.exit_code == 0, result.output
    assert "2 questions (2 multilingual_retrieval), 2 instances in de, zh" in result.output
    with Warehouse(home, read_only=True) as wh:
        assert wh.query("SELECT langs FROM qa_benchmarks WHERE benchmark = 'xrag'") == [(["de", "zh"],)]
    english = CliRunner().invoke(app, ["--home", str(home), "import", "xrag", "--source", str(source), "--langs", "en"])
    assert english.exit_code == 1 and "en cannot be imported (the source has no data in it); available: de, zh" \
        in english.output
