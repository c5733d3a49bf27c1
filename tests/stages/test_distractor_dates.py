"""The distractors stage reads first-appearance dates: an older dump ingested later recomputes a live benchmark's
distractors, and unchanged dates keep the cell cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.distractors import DistractorConfig
from tasks.dumps.appearance import record_appearance
from tasks.index.base import IndexConfig
from tasks.index.corpus import build_index
from tasks.llm import Budget
from tasks.stage import StageRef
from tasks.stages import distractors_stage
from tasks.stages.orchestration import close_shared_warehouse, shared_warehouse
from tests.support.warehouse_docs import ingest_dump

# One and Two first seen in October, Three and Four new in November; the item is about Four, new in its window.
OCT = [(1, "One", None), (2, "Two", None)]
NOV = OCT + [(3, "Three", None), (4, "Four", None)]
CONFIG = DistractorConfig(temporal_gap_days=None)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    wh = shared_warehouse(home)
    ingest_dump(wh, "en", "20261031", OCT)
    ingest_dump(wh, "en", "20261130", NOV)
    build_index(wh, "en", "tantivy", IndexConfig(), "index-en")
    with wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('live', 'xrag', ['en'], 'g', '{}', now())")
        cur.execute("INSERT INTO qa_items (benchmark, item_id, recipe, lang, question, answer, documents, status,"
                    " generator, fingerprint, window_since, window_until) VALUES ('live', 'q', 'xrag', 'en',"
                    " 'text of Four?', 'nowhere', '[{\"lang\": \"en\", \"page_id\": 4, \"title\": \"Four\"}]', 'ok',"
                    " 'g', 'fp', DATE '2026-11-01', DATE '2026-11-30')")
        cur.execute("INSERT INTO qa_reviews VALUES ('live', 'q', 'natural', 'pass', 'llm:j', NULL, NULL, 'prescreen',"
                    " 'fp', now())")
    yield home
    close_shared_warehouse(home)


def _select(home: Path) -> tuple[str, dict[int, str]]:
    """Run the stage as the instances flow does; (its status, the chosen candidates' rejection codes by page)."""
    index = StageRef(stage="index", cell="en", fingerprint="index-en", status="computed", rows=4)
    result = distractors_stage.fn(str(home), "live", "live", CONFIG, "prescreen", "tantivy", {"en": index}, {},
                                  Budget(), frozenset(), "run")
    ref = result if isinstance(result, StageRef) else result.result()
    rows = shared_warehouse(home).query("SELECT page_id, coalesce(split_part(reason, ':', 1), status) FROM distractors"
                                 " WHERE benchmark = 'live'") if ref.status == "computed" else []
    return ref.status, dict(rows)


def test_unchanged_dates_keep_the_cell_and_an_older_dump_recomputes_it(home: Path) -> None:
    status, chosen = _select(home)
    assert status == "computed"
    assert chosen[1] == chosen[2] == "kept"  # first seen 2026-10-31, before the window
    assert chosen[3] == "not_before_window"  # new in 2026-11-30, inside it

    record_appearance(shared_warehouse(home), "en", "20261130")  # the same dump recorded again: no date moves
    assert _select(home)[0] == "cached"

    # a September dump that already had Three, ingested later; then the November dump again, as the guide says,
    # so the documents (and the index built from them) are what they were
    ingest_dump(shared_warehouse(home), "en", "20260930", [(3, "Three", None)])
    ingest_dump(shared_warehouse(home), "en", "20261130", NOV)
    status, chosen = _select(home)
    assert status == "computed"
    assert chosen[3] == "kept"  # first seen 2026-09-30 now: older than the window
