"""CLIRMatrix export format: writing, reading back, validating (tasks.pairing.export)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import InputFormatError
from tasks.pairing.export import (
    QueryRecord,
    docs_path,
    qrels_path,
    read_docs_tsv,
    read_qrels_jsonl,
    validate_export,
    write_docs_tsv,
    write_qrels_jsonl,
)

RECORDS = [
    QueryRecord("64", "Berlin", (("640", 6), ("1830", 5), ("77", 0))),
    QueryRecord("90", "Paris", (("900", 6),)),
]
DOCS = [("640", "Berlin ist die Hauptstadt."), ("1830", "Deutschland ..."), ("77", "x"), ("900", "Paris ...")]


def _export(out: Path) -> Path:
    write_qrels_jsonl(qrels_path(out, "bi-base", "en", "de", "test1"), RECORDS)
    write_docs_tsv(docs_path(out, "bi-base", "de"), DOCS)
    return out / "bi-base"


def test_file_names_follow_the_documented_layout(tmp_path: Path) -> None:
    assert qrels_path(tmp_path, "bi-base", "en", "de", "test1") == tmp_path / "bi-base" / "en.de.test1.jsonl"
    assert docs_path(tmp_path, "multi", "zh-yue") == tmp_path / "multi" / "docs" / "zh-yue.tsv"


@pytest.mark.parametrize("lang", ["../de", "de.x", "", "d e"])
def test_unsafe_names_are_rejected(tmp_path: Path, lang: str) -> None:
    with pytest.raises(ValueError, match="file name"):
        qrels_path(tmp_path, "bi-base", "en", lang, "dev")


def test_jsonl_lines_have_the_published_shape(tmp_path: Path) -> None:
    path = tmp_path / "en.de.dev.jsonl"
    assert write_qrels_jsonl(path, RECORDS) == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "src_id": "64", "src_query": "Berlin", "tgt_results": [["640", 6], ["1830", 5], ["77", 0]],
    }
    assert json.loads(lines[1]) == {"src_id": "90", "src_query": "Paris", "tgt_results": [["900", 6]]}


def test_queries_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "en.de.dev.jsonl"
    write_qrels_jsonl(path, RECORDS)
    assert list(read_qrels_jsonl(path)) == RECORDS


def test_docs_tsv_flattens_tabs_and_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "de.tsv"
    assert write_docs_tsv(path, [("1", "a\tb\nc\r\nd\u2028e"), ("2", "plain")]) == 2
    assert path.read_text(encoding="utf-8") == "1\ta b c  d e\n2\tplain\n"
    assert list(read_docs_tsv(path)) == [("1", "a b c  d e"), ("2", "plain")]


def test_doc_id_with_a_tab_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="doc id"):
        write_docs_tsv(tmp_path / "de.tsv", [("1\t2", "text")])


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "en.de.dev.jsonl"
    write_qrels_jsonl(path, RECORDS)
    before = path.read_bytes()

    def broken():
        yield RECORDS[0]
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        write_qrels_jsonl(path, broken())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ((("1", 7),), "label 7"),
        ((("1", True),), "label True"),
        ((("1", 2), ("1", 3)), "twice"),
        (((1, 2),), "doc id 1"),
    ],
)
def test_query_records_reject_bad_results(results: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QueryRecord("5", "q", results)


def test_reading_stops_at_a_bad_line_after_yielding_the_good_ones(tmp_path: Path) -> None:
    path = tmp_path / "en.de.dev.jsonl"
    good = '{"src_id": "1", "src_query": "a", "tgt_results": [["3", 6]]}'
    path.write_text(good + '\n{"src_id": "2", \n', encoding="utf-8")
    records = read_qrels_jsonl(path)
    assert next(records) == QueryRecord("1", "a", (("3", 6),))
    with pytest.raises(InputFormatError, match="line 2"):
        next(records)


def test_reading_docs_reports_a_line_without_tab(tmp_path: Path) -> None:
    path = tmp_path / "de.tsv"
    path.write_text("1\tfine\nbroken line\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="line 2"):
        list(read_docs_tsv(path))


def test_a_sound_export_validates_clean(tmp_path: Path) -> None:
    assert validate_export(_export(tmp_path)) == []
    assert validate_export(tmp_path) == []  # a directory of collections works too


def test_validation_reports_every_problem(tmp_path: Path) -> None:
    collection = _export(tmp_path)
    lines = [
        '{"src_id": "1", "src_query": "ok", "tgt_results": [["640", 6]]}',
        "{not json",
        '{"src_id": "2", "tgt_results": []}',
        '{"src_id": "3", "src_query": "c", "tgt_results": [["640", 9]]}',
        '{"src_id": "4", "src_query": "d", "tgt_results": [["640", 6], ["640", 5]]}',
        '{"src_id": "5", "src_query": "e", "tgt_results": [["12345", 6]]}',
        '{"src_id": "1", "src_query": "again", "tgt_results": []}',
    ]
    (collection / "en.de.dev.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (collection / "en.fr.dev.jsonl").write_text("", encoding="utf-8")  # no docs/fr.tsv
    (collection / "en-de-dev.jsonl").write_text("", encoding="utf-8")
    problems = validate_export(collection)
    dev = str(collection / "en.de.dev.jsonl")
    expected_fragments = [
        f"{dev}:2:",
        f"{dev}:3: missing field(s) ['src_query']",
        f"{dev}:4:",  # label 9
        f"{dev}:5:",  # 640 twice
        f"{dev}:6: query 5: doc id(s) ['12345'] not in the documents file",
        f"{dev}:7: query 1 appears twice",
        "fr.tsv is missing",
        "en-de-dev.jsonl: name is not",
    ]
    for fragment in expected_fragments:
        assert any(fragment in problem for problem in problems), (fragment, problems)
    assert any("label 9" in problem for problem in problems)
    assert any("640 appears twice" in problem for problem in problems)
    assert len(problems) == len(expected_fragments)
