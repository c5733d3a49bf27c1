"""Ingesting the real, truncated XML page dumps through the corpus flow (on Dask)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.corpus import CorpusParams, corpus_flow
from tasks.warehouse.db import Warehouse
from tests.conftest import shared_data

# Complete main-namespace pages before the cut, counted independently of the
# parser: decompress, split on "<page>", keep pieces containing "</page>" and
# "<ns>0</ns>"; "non-redirect" drops those containing "<redirect".
EXPECTED = {
    "bn": {"pages": 449, "articles": 380, "file": "bnwiki-truncated-100k.xml.xz", "last": "মিডিয়াউইকি:Common.css"},
    "el": {"pages": 545, "articles": 524, "file": "elwiki-truncated-100k.xml.xz", "last": "18 Μαρτίου"},
    "ja": {"pages": 204, "articles": 189, "file": "jawiki-truncated-100k.xml.xz", "last": "プロジェクト:プロジェクト関連文書"},
    "uk": {"pages": 525, "articles": 512, "file": "ukwiki-truncated-100k.xml.xz", "last": "1702"},
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, prefect_api: None) -> tuple[Path, list[dict]]:
    source = shared_data("wikipedia-xml")
    home = tmp_path_factory.mktemp("xml-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("BABELBENCH_COMPUTE", "dask")  # the real parallel path: a local Dask cluster
    try:
        rows = corpus_flow(CorpusParams(langs=list(EXPECTED), source=str(source), kind="xml", home=str(home), progress=False))
    finally:
        mp.undo()
    return home, rows


def test_each_sample_yields_exactly_its_complete_main_namespace_pages(ingested: tuple[Path, list[dict]]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        got = {lang: (pages, articles) for lang, pages, articles in wh.query(
            "SELECT lang, count(*), count(*) FILTER (WHERE NOT is_redirect) FROM documents GROUP BY lang")}
        assert wh.scalar("SELECT count(*) FROM documents WHERE namespace <> 0") == 0
    assert got == {lang: (e["pages"], e["articles"]) for lang, e in EXPECTED.items()}


def test_the_truncated_last_page_is_reported_with_file_and_position(ingested: tuple[Path, list[dict]]) -> None:
    home, rows = ingested
    with Warehouse(home) as wh:
        issues = wh.query_dicts("SELECT cell, source, position, item, reason FROM ingest_issues WHERE stage = 'documents'")
        titles = {r[0] for r in wh.query("SELECT title FROM documents")}
    by_lang = {i["cell"]: i for i in issues}
    assert set(by_lang) == set(EXPECTED) and len(issues) == 4
    for lang, expected in EXPECTED.items():
        issue = by_lang[lang]
        assert issue["source"].endswith(expected["file"])
        assert "line 100001" in issue["position"]
        assert issue["item"] == expected["last"] and issue["reason"].startswith("truncated")
        assert expected["last"] not in titles
    documents = {r["cell"]: r for r in rows if r["stage"] == "documents"}
    assert all(documents[lang]["status"] == "computed" and documents[lang]["issues"] == 1 for lang in EXPECTED)
    assert all("truncated" in documents[lang]["message"] and EXPECTED[lang]["file"] in documents[lang]["message"] for lang in EXPECTED)


def test_cleaned_text_has_no_markup_residue(ingested: tuple[Path, list[dict]]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        residue = ["{{", "[[", "<ref", "\'\'\'"]
        dirty = wh.query(
            "SELECT lang, title FROM documents WHERE NOT is_redirect AND ("
            + " OR ".join("contains(text, ?)" for _ in residue) + ")", residue)
        empty = wh.scalar("SELECT count(*) FROM documents WHERE NOT is_redirect AND length(text) = 0")
    assert dirty == []
    assert empty < 0.05 * sum(e["articles"] for e in EXPECTED.values())


def test_redirects_are_kept_and_flagged_with_their_target(ingested: tuple[Path, list[dict]]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        redirects = wh.query("SELECT count(*), count(redirect_target) FROM documents WHERE is_redirect")[0]
    expected = sum(e["pages"] - e["articles"] for e in EXPECTED.values())
    assert redirects == (expected, expected)
