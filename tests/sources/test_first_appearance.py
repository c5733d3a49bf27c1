"""First-appearance dates over three (then four) synthetic dumps of one wiki."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from tasks.dumps.appearance import dump_day, record_appearance
from tasks.errors import ConfigError
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump


def _ingest(wh: Warehouse, day: str, pages: list[tuple[int, str, str | None]]) -> str:
    """(page id, title, redirect target or None) of one dump of the wiki "xx"."""
    return ingest_dump(wh, "xx", day, pages)


def _dates(wh: Warehouse) -> dict[str, tuple[date, bool]]:
    return {title: (first, before) for title, first, before in
            wh.query("SELECT title, first_dump, on_or_before FROM document_dates WHERE lang = 'xx'")}


def _appeared_after(wh: Warehouse) -> dict[str, date | None]:
    return dict(wh.query("SELECT title, appeared_after FROM document_dates WHERE lang = 'xx'"))


SEP = [(1, "Alpha", None), (2, "Beta", None), (3, "Gamma", None)]
# Beta moved to "Beta (band)": same id, and the old title is now a redirect with a new id; Gamma deleted; Delta new
OCT = [(1, "Alpha", None), (2, "Beta (band)", None), (4, "Beta", "Beta (band)"), (5, "Delta", None)]
# Gamma recreated under its old title with a new id; Epsilon new, with a redirect Zeta to it
NOV = OCT + [(6, "Gamma", None), (7, "Epsilon", None), (8, "Zeta", "Epsilon")]


def test_each_article_keeps_the_first_dump_it_appeared_in(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    _ingest(wh, "20260901", SEP)
    _ingest(wh, "20261001", OCT)
    assert _ingest(wh, "20261101", NOV) == "1 articles new in 2026-11-01"  # Epsilon only
    sep, oct_, nov = date(2026, 9, 1), date(2026, 10, 1), date(2026, 11, 1)
    assert _dates(wh) == {
        "Alpha": (sep, True),  # in the earliest dump: only "on or before"
        "Beta (band)": (sep, True),  # moved: its page id was seen in September
        "Delta": (oct_, False),
        "Gamma": (sep, True),  # deleted in October, recreated (new id) in November: its title was seen in September
        "Epsilon": (nov, False),
    }  # the redirects Beta and Zeta are not articles and have no date
    # the dump before the first one it was seen in: Delta appeared after September, Epsilon after October
    assert _appeared_after(wh) == {"Alpha": None, "Beta (band)": None, "Delta": sep, "Gamma": None, "Epsilon": oct_}


def test_an_older_dump_ingested_later_moves_dates_back(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    for day, pages in (("20260901", SEP), ("20261001", OCT), ("20261101", NOV)):
        _ingest(wh, day, pages)
    _ingest(wh, "20260801", [(1, "Alpha", None), (9, "Zeta", None)])  # Zeta was an article in August
    _ingest(wh, "20261101", NOV)  # the newest dump again; recording it twice changes nothing
    aug, sep = date(2026, 8, 1), date(2026, 9, 1)
    dates = _dates(wh)
    assert dates["Alpha"] == (aug, True)
    assert dates["Beta (band)"] == (sep, False)  # now known to have appeared after August
    assert dates["Gamma"] == (sep, False)
    assert "Zeta" not in dates  # a redirect now, still not an article


def test_a_dump_without_a_date_records_nothing(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    assert "no date" in record_appearance(wh, "xx", None).message
    assert wh.scalar("SELECT count(*) FROM first_seen") == 0



@pytest.mark.parametrize("text", ["2026-13-01", "202611", "november"])
def test_a_malformed_dump_date_is_refused_by_name(text: str) -> None:
    with pytest.raises(ConfigError, match=text):
        dump_day(text)
