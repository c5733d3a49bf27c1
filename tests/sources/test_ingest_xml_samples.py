"""Ingesting the real, truncated XML page dumps through the corpus flow (on Dask): the excerpts in tests/data, which
every clone has, and the whole files in ../shared/data when they are there."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.corpus import CorpusParams, corpus_flow
from tasks.warehouse.db import Warehouse
from tests.conftest import TEST_DATA, shared_data

# Complete main-namespace pages before the cut, counted independently of the
# parser: decompress, split on "<page>", keep pieces containing "</page>" and
# "<ns>0</ns>"; "non-redirect" drops those containing "<redirect". The excerpts
# (tests/data/wikipedia-xml/README.md) were counted the same way: bn 15 articles +
# 69 redirects = 84 pages, el 38 + 21 = 59, ja 13 + 15 = 28, uk 21 + 13 = 34; "lines" by `xz -dc FILE | wc -l`.
EXPECTED_BY_SOURCE = {
    "excerpts": {
        "bn": {"pages": 84, "articles": 15, "lines": 5_880, "file": "bnwiki-excerpt.xml.xz", "last": "মিডিয়াউইকি:Common.css"},
        "el": {"pages": 59, "articles": 38, "lines": 4_160, "file": "elwiki-excerpt.xml.xz", "last": "18 Μαρτίου"},
        "ja": {"pages": 28, "articles": 13, "lines": 4_522, "file": "jawiki-excerpt.xml.xz", "last": "プロジェクト:プロジェクト関連文書"},
        "uk": {"pages": 34, "articles": 21, "lines": 4_119, "file": "ukwiki-excerpt.xml.xz", "last": "1702"},
    },
    "shared": {
        "bn": {"pages": 449, "articles": 380, "lines": 100_000, "file": "bnwiki-truncated-100k.xml.xz", "last": "মিডিয়াউইকি:Common.css"},
        "el": {"pages": 545, "articles": 524, "lines": 100_000, "file": "elwiki-truncated-100k.xml.xz", "last": "18 Μαρτίου"},
        "ja": {"pages": 204, "articles": 189, "lines": 100_000, "file": "jawiki-truncated-100k.xml.xz", "last": "プロジェクト:プロジェクト関連文書"},
        "uk": {"pages": 525, "articles": 512, "lines": 100_000, "file": "ukwiki-truncated-100k.xml.xz", "last": "1702"},
    },
}


@pytest.fixture(scope="module", params=sorted(EXPECTED_BY_SOURCE))
def source(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def expected(source: str) -> dict[str, dict]:
    return EXPECTED_BY_SOURCE[source]


@pytest.fixture(scope="module")
def ingested(source: str, expected: dict[str, dict], tmp_path_factory: pytest.TempPathFactory,
             prefect_api: None) -> tuple[Path, list[dict]]:
    folder = TEST_DATA / "wikipedia-xml" if source == "excerpts" else shared_data("wikipedia-xml")
    home = tmp_path_factory.mktemp("xml-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("BABELBENCH_COMPUTE", "dask")  # the real parallel path: a local Dask cluster
    try:
        rows = corpus_flow(CorpusParams(langs=list(expected), source=str(folder), kind="xml", home=str(home), progress=False))
    finally:
        mp.undo()
    return home, rows


def test_each_sample_yields_exactly_its_complete_main_namespace_pages(ingested: tuple[Path, list[dict]],
                                                                       expected: dict[str, dict]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        got = {lang: (pages, articles) for lang, pages, articles in wh.query(
            "SELECT lang, count(*), count(*) FILTER (WHERE NOT is_redirect) FROM documents GROUP BY lang")}
        assert wh.scalar("SELECT count(*) FROM documents WHERE namespace <> 0") == 0
    assert got == {lang: (e["pages"], e["articles"]) for lang, e in expected.items()}


def test_the_truncated_last_page_is_reported_with_file_and_position(ingested: tuple[Path, list[dict]],
                                                                    expected: dict[str, dict]) -> None:
    home, rows = ingested
    with Warehouse(home) as wh:
        issues = wh.query_dicts("SELECT cell, source, position, item, reason FROM ingest_issues WHERE stage = 'documents'")
        titles = {r[0] for r in wh.query("SELECT title FROM documents")}
    by_lang = {i["cell"]: i for i in issues}
    assert set(by_lang) == set(expected) and len(issues) == 4
    for lang, sample in expected.items():
        issue = by_lang[lang]
        assert issue["source"].endswith(sample["file"])
        assert f"line {sample['lines'] + 1}," in issue["position"]
        assert issue["item"] == sample["last"] and issue["reason"].startswith("truncated")
        assert sample["last"] not in titles
    documents = {r["cell"]: r for r in rows if r["stage"] == "documents"}
    assert all(documents[lang]["status"] == "computed" and documents[lang]["issues"] == 1 for lang in expected)
    assert all("truncated" in documents[lang]["message"] and expected[lang]["file"] in documents[lang]["message"] for lang in expected)


def test_cleaned_text_has_no_markup_residue(ingested: tuple[Path, list[dict]], expected: dict[str, dict]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        residue = ["{{", "[[", "<ref", "\'\'\'"]
        dirty = wh.query(
            "SELECT lang, title FROM documents WHERE NOT is_redirect AND ("
            + " OR ".join("contains(text, ?)" for _ in residue) + ")", residue)
        empty = wh.scalar("SELECT count(*) FROM documents WHERE NOT is_redirect AND length(text) = 0")
    assert dirty == []
    assert empty < 0.05 * sum(e["articles"] for e in expected.values())


def test_redirects_are_kept_and_flagged_with_their_target(ingested: tuple[Path, list[dict]],
                                                          expected: dict[str, dict]) -> None:
    home, _ = ingested
    with Warehouse(home) as wh:
        redirects = wh.query("SELECT count(*), count(redirect_target) FROM documents WHERE is_redirect")[0]
    expected = sum(e["pages"] - e["articles"] for e in expected.values())
    assert redirects == (expected, expected)
