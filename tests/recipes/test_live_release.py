"""A monthly live release: the window of the articles new in the latest dump, and the month's benchmark name."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.qa.live import latest_window, live_months, live_release, newest_month
from tasks.qa.window import Window
from tasks.stages.inventory import register_benchmark
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump

SEP = [(1, "One", None)]
OCT = SEP + [(2, "Two", None)]
NOV = OCT + [(3, "Three", None)]
DEC = NOV + [(4, "Four", None)]


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    """English and German, each with the dumps of 2026-09-30, 2026-10-31 and 2026-11-30 ingested."""
    wh = Warehouse(tmp_path)
    for lang in ("en", "de"):
        for day, pages in (("20260930", SEP), ("20261031", OCT), ("20261130", NOV)):
            ingest_dump(wh, lang, day, pages)
    return wh


def _register(wh: Warehouse, name: str, window: Window | None) -> None:
    """Record a built benchmark as the qa-build flow does: its definition holds the parameters, window included."""
    register_benchmark(wh, name, "xrag", ["en", "de"], "g",
                       {"recipe": "xrag", "config": {"window": window.model_dump(mode="json") if window else None}})


def test_the_latest_month_is_the_window_after_the_dump_before_it_and_names_the_benchmark(wh: Warehouse) -> None:
    # previous dump 2026-10-31, so the window opens the day after, 2026-11-01, and closes on the latest, 2026-11-30
    november = Window(since=date(2026, 11, 1), until=date(2026, 11, 30))
    assert latest_window(wh, ["en", "de"]) == november
    assert live_release(wh, "xrag", ["en", "de"]) == ("xrag-live-2026-11", november)
    assert live_release(wh, "xrag", ["en", "de"], "mine") == ("mine", november)  # a given name is kept


def test_a_newer_dump_makes_a_new_month_and_the_old_one_stays(wh: Warehouse) -> None:
    name, window = live_release(wh, "xrag", ["en", "de"])
    _register(wh, name, window)
    assert live_release(wh, "xrag", ["en", "de"]) == (name, window)  # the same month again: a rebuild of itself

    for lang in ("en", "de"):
        ingest_dump(wh, lang, "20261231", DEC)
    # previous dump now 2026-11-30: the window is 2026-12-01 to 2026-12-31
    december = Window(since=date(2026, 12, 1), until=date(2026, 12, 31))
    assert live_release(wh, "xrag", ["en", "de"]) == ("xrag-live-2026-12", december)
    _register(wh, "xrag-live-2026-12", december)
    assert live_months(wh, "xrag-live") == ["2026-11", "2026-12"]
    assert newest_month(wh, "xrag-live") == "xrag-live-2026-12"
    stored = json.loads(wh.scalar("SELECT config FROM qa_benchmarks WHERE benchmark = 'xrag-live-2026-11'"))
    assert stored["config"]["window"] == {"since": "2026-11-01", "until": "2026-11-30"}  # November's is untouched

    with pytest.raises(ConfigError, match="benchmark xrag-live-2026-11 exists, built with the window "
                                          "2026-11-01:2026-11-30; the window of the latest dumps is 2026-12-01"):
        live_release(wh, "xrag", ["en", "de"], "xrag-live-2026-11")  # naming the old month would overwrite it


def test_a_benchmark_of_the_month_built_without_a_window_is_not_overwritten(wh: Warehouse) -> None:
    _register(wh, "xrag-live-2026-11", None)
    with pytest.raises(ConfigError, match="built with the window none"):
        live_release(wh, "xrag", ["en", "de"])


def test_a_home_with_one_dump_says_there_is_no_earlier_dump_to_compare_with(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    ingest_dump(wh, "en", "20261130", NOV)
    with pytest.raises(ConfigError, match=r"en has only the dump of 2026-11-30 ingested, so there is no earlier dump "
                                          r"to compare with"):
        live_release(wh, "xrag", ["en"])
    with pytest.raises(ConfigError, match="de has no dated dump ingested"):
        latest_window(wh, ["de"])


def test_a_language_whose_latest_dump_lags_another_is_named(wh: Warehouse) -> None:
    ingest_dump(wh, "en", "20261231", DEC)  # English has December, German still ends with November
    with pytest.raises(ConfigError, match=r"de's latest dump \(2026-11-30\) is not after another language's previous "
                                          r"dump \(2026-11-30\)"):
        latest_window(wh, ["en", "de"])


def test_no_month_built_yet_is_a_clear_error(wh: Warehouse) -> None:
    with pytest.raises(ConfigError, match="live benchmark xrag-live: no month built yet"):
        newest_month(wh, "xrag-live")
