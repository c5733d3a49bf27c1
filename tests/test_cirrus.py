"""CirrusSearch content dump parsing, on small hand-written dumps in the real bulk format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tasks.dumps.cirrus import iter_cirrus_documents
from tasks.dumps.records import DOCUMENT_COLUMNS
from tasks.errors import InputFormatError, TruncatedInputError


def _action(page_id: str, *, with_type: bool = True) -> str:
    meta = {"_type": "page", "_id": page_id} if with_type else {"_id": page_id}
    return json.dumps({"index": meta})


def _doc(title: str, namespace: int = 0, **fields: object) -> str:
    body = {"title": title, "text": f"{title} text.", "namespace": namespace, "timestamp": "2024-05-01T10:00:00Z"}
    body.update(fields)
    return json.dumps(body, ensure_ascii=False)


def _write_gz(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    return path


def _row(page_id: int | None, title: str, **overrides: object) -> dict[str, object]:
    row = {
        "lang": "en", "page_id": page_id, "title": title, "text": f"{title} text.", "qid": None, "namespace": 0,
        "is_redirect": False, "redirect_target": None, "is_disambiguation": False,
        "timestamp": "2024-05-01T10:00:00Z", "source": "enwiki-20240501-cirrussearch-content.json.gz",
    }
    row.update(overrides)
    return row


SAMPLE = [
    _action("12"),
    _doc("Anarchism", wikibase_item="Q6199", category=["Political philosophy"], template=["Template:Infobox"],
         redirect=[{"namespace": 0, "title": "Anarchist"}, {"namespace": 1, "title": "Talk:Anarchy"}],
         popularity_score=0.001, incoming_links=5000, opening_text="Anarchism is", heading=["History"],
         language="en", create_timestamp="2001-10-11T12:00:00Z"),
    _action("25", with_type=False),
    _doc("Mercury", category=["All disambiguation pages", "Disambiguation pages"], template=[], redirect=[]),
    _action("40"),
    _doc("Portal:Science", namespace=100, wikibase_item="Q5"),
    _action("41"),
    _doc("Jaguar (disambiguation)", wikibase_item="Q100", category=[], template=["Template:Dab", "Template:Short description"]),
]


def test_documents_qids_redirects_namespaces_and_disambiguation(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", SAMPLE)
    issues: list[dict] = []

    rows = list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert rows == [
        _row(12, "Anarchism", qid="Q6199"),
        _row(None, "Anarchist", text="", is_redirect=True, redirect_target="Anarchism", timestamp=None),
        _row(25, "Mercury", is_disambiguation=True),
        _row(41, "Jaguar (disambiguation)", qid="Q100", is_disambiguation=True),
    ]
    assert all(tuple(row) == DOCUMENT_COLUMNS for row in rows)
    assert issues == []


def test_localised_template_prefix_matches_the_languages_markers(tmp_path: Path) -> None:
    lines = [_action("7"), _doc("Bank", template=["Vorlage:Begriffsklärung"], category=[])]
    path = _write_gz(tmp_path / "dewiki-20240501-cirrussearch-content.json.gz", lines)

    (german,) = iter_cirrus_documents(path, "de")
    (english,) = iter_cirrus_documents(path, "en")

    assert german["is_disambiguation"] is True and german["lang"] == "de"
    assert english["is_disambiguation"] is False  # the German marker is not an English one


def test_malformed_line_is_reported_and_later_documents_survive(tmp_path: Path) -> None:
    lines = [SAMPLE[0], SAMPLE[1], _action("25"), '{"title": "Mercury", "text": "broken', SAMPLE[6], SAMPLE[7]]
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", lines)
    issues: list[dict] = []

    titles = [row["title"] for row in iter_cirrus_documents(path, "en", on_issue=issues.append)]

    assert titles == ["Anarchism", "Anarchist", "Jaguar (disambiguation)"]
    assert len(issues) == 1
    assert issues[0]["source"] == str(path)
    assert issues[0]["position"] == "line 4"
    assert issues[0]["item"] == "25"
    assert "malformed JSON" in issues[0]["reason"]


def test_action_line_without_its_document_is_reported(tmp_path: Path) -> None:
    lines = [_action("3"), _action("4"), _doc("Zebra")]
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", lines)
    issues: list[dict] = []

    rows = list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert [(row["page_id"], row["title"]) for row in rows] == [(4, "Zebra")]
    assert [(i["position"], i["item"], i["reason"]) for i in issues] == [("line 1", "3", "action line without its document")]


def test_truncated_gzip_yields_complete_documents_then_names_the_file(tmp_path: Path) -> None:
    # Two gzip members: the first (two pages) is whole, the second is cut in half,
    # as a download killed part-way through the file would leave it.
    first = gzip.compress(("\n".join(SAMPLE[:4]) + "\n").encode(), mtime=0)
    second = gzip.compress(("\n".join(SAMPLE[6:8]) + "\n").encode(), mtime=0)
    path = tmp_path / "enwiki-20240501-cirrussearch-content.json.gz"
    path.write_bytes(first + second[: len(second) // 2])

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_cirrus_documents(path, "en"):
            rows.append(row)

    assert [row["title"] for row in rows] == ["Anarchism", "Anarchist", "Mercury"]
    assert caught.value.source == str(path)
    assert caught.value.position.startswith("line ")
    assert caught.value.last_item == "Mercury"
    assert path.name in str(caught.value)


def test_plain_file_cut_inside_a_line_is_truncation_not_an_issue(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-cirrussearch-content.json"
    path.write_text("\n".join(SAMPLE[:3]) + "\n" + SAMPLE[3][:20], encoding="utf-8")
    issues: list[dict] = []

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_cirrus_documents(path, "en", on_issue=issues.append):
            rows.append(row)

    assert [row["title"] for row in rows] == ["Anarchism", "Anarchist"]
    assert caught.value.position == "line 4"
    assert caught.value.last_item == "Anarchism"
    assert issues == []


@pytest.mark.parametrize(("first_line", "shown"), [
    (SAMPLE[1], SAMPLE[1][:60]),  # a document where the action line should be: not bulk format
    ("<!DOCTYPE html><html><body>Service unavailable</body></html>", "<!DOCTYPE html><html><body>Service unavailable</body></html>"),
])
def test_a_file_that_does_not_open_with_an_action_line_is_not_a_cirrus_dump(
        tmp_path: Path, first_line: str, shown: str) -> None:
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", [first_line, *SAMPLE])
    issues: list[dict] = []

    with pytest.raises(InputFormatError) as caught:
        list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert not isinstance(caught.value, TruncatedInputError)
    assert (caught.value.position, caught.value.reason) == (
        "line 1", f'not a CirrusSearch bulk dump: the first line is not an {{"index": …}} action line ({shown!r})')
    assert issues == []
