"""A live build's window: exactly the articles new in it are candidates, and distractors come from before it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from tasks.distractors.config import DistractorConfig
from tasks.distractors.filters import ItemRules, TextForms, load_documents
from tasks.errors import ConfigError
from tasks.qa.eclektic import EclekticConfig, select_candidates
from tasks.qa.pairing_articles import EntityCodes
from tasks.qa.window import Window, parse_window
from tasks.qa.xrag_pairs import _days_apart, load_articles
from tasks.text.answer_match import AnswerMatcher
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump


def _text(title: str) -> str:
    """Over 200 characters (the length rule), and sharing no word with another article's (no near duplicates)."""
    return " ".join(f"{title}{i}" for i in range(40))


# German: Berlin (Q64) and Hamburg (Q1055) in September; Köln (Q365) and Bonn (Q586) new in October; Essen (Q2066)
# and Dresden (Q1731) new in November
SEP = [(1, "Berlin", None, "Q64", _text("Berlin")), (2, "Hamburg", None, "Q1055", _text("Hamburg"))]
OCT = SEP + [(3, "Köln", None, "Q365", _text("Köln")), (4, "Bonn", None, "Q586", _text("Bonn"))]
NOV = OCT + [(5, "Essen", None, "Q2066", _text("Essen")), (6, "Dresden", None, "Q1731", _text("Dresden")),
             (7, "Dresda", "Dresden")]


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    wh = Warehouse(tmp_path)
    for day, pages in (("20260901", SEP), ("20261001", OCT), ("20261101", NOV)):
        ingest_dump(wh, "de", day, pages)
    ingest_dump(wh, "fr", "20261101", [(1, "Paris", None, "Q90", _text("Paris"))])  # QID coverage of the other language
    return wh


@pytest.mark.parametrize(("window", "expected"), [
    ("20261101", {"Essen", "Dresden"}),  # open-ended from the November dump
    ("2026-10-01:2026-10-31", {"Köln", "Bonn"}),  # October's dump only
    ("2026-09-15:2026-11-01", {"Köln", "Bonn", "Essen", "Dresden"}),
    ("2026-09-01:2026-09-30", set()),  # September is the earliest dump: only "on or before", never shown new
])
def test_a_window_makes_exactly_the_articles_new_in_it_eligible(wh: Warehouse, window: str, expected: set[str]) -> None:
    config = EclekticConfig(window=parse_window(window), per_lang=10)
    select_candidates(wh, "live", "de", ["de", "fr"], config, "fp")
    rows = wh.query("SELECT title, eligible, reason FROM qa_candidates WHERE benchmark = 'live'")
    assert {title for title, eligible, _ in rows if eligible} == expected
    assert len(rows) == 6  # every article is a row; the redirect is no article
    assert all("window" in reason for _, eligible, reason in rows if not eligible)  # each says why it is out


def test_without_a_window_every_article_is_eligible(wh: Warehouse) -> None:
    select_candidates(wh, "all", "de", ["de", "fr"], EclekticConfig(per_lang=10), "fp")
    assert wh.scalar("SELECT count(*) FROM qa_candidates WHERE benchmark = 'all' AND eligible") == 6


def test_xrag_pairs_only_new_articles_dated_by_first_appearance(wh: Warehouse) -> None:
    articles = {a.title: a for a in load_articles(wh, "de", EntityCodes(), Window(since=date(2026, 10, 1)))}
    assert set(articles) == {"Köln", "Bonn", "Essen", "Dresden"}
    assert _days_apart(articles["Köln"], articles["Bonn"]) == 0.0  # both new in the October dump
    assert _days_apart(articles["Köln"], articles["Essen"]) == 31.0  # 2026-10-01 to 2026-11-01: 31 days


def test_distractors_come_only_from_articles_older_than_the_window(wh: Warehouse) -> None:
    docs = load_documents(wh, "de", [1, 2, 3, 4, 5, 6])
    assert {d.title: d.first_seen for d in docs.values()}["Köln"] == date(2026, 10, 1)
    rules = ItemRules((docs[5], docs[6]), AnswerMatcher("nothing to find here", "de"),
                      DistractorConfig(temporal_gap_days=None), before=date(2026, 11, 1))
    verdicts = {d.title: rules.rejection(d, TextForms()) for d in docs.values() if d.page_id not in (5, 6)}
    assert verdicts == {"Berlin": None, "Hamburg": None, "Köln": None, "Bonn": None}  # all first seen before November
    late = ItemRules((docs[1],), AnswerMatcher("nothing to find here", "de"), DistractorConfig(temporal_gap_days=None),
                     before=date(2026, 10, 1))
    assert late.rejection(docs[3], TextForms()) == (
        "not_before_window: first seen 2026-10-01, not before the window start 2026-10-01")
    assert late.rejection(docs[2], TextForms()) is None  # Hamburg: on or before 2026-09-01, so older than October


@pytest.mark.parametrize(("text", "message"), [
    ("2026-11-01:2026-10-01", "UNTIL is before SINCE"), ("2026-11", "expected YYYYMMDD or YYYY-MM-DD")])
def test_a_bad_window_is_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_window(text)
