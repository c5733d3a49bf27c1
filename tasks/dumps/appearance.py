"""First appearance: per article, the earliest ingested dump of its wiki in which it was seen.

A wiki's documents cell holds one dump at a time, so each ingest adds its sightings to ``first_seen`` (keeping
the earliest date per page id and per title) before the next dump replaces the cell.  Keeping the minimum makes
the stage order-free: ingesting an older dump later moves dates back, and ingesting a dump twice changes nothing.
Redirects and other namespaces are not articles and are never sightings (see docs/live-benchmarks.md).
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import date

from tasks.errors import ConfigError
from tasks.stage import StageOutput, rows_digest
from tasks.warehouse.db import Warehouse, guard, upsert

_DAY = re.compile(r"\d{4}-?\d{2}-?\d{2}")
#: each article's earliest sighting kept: a MERGE on first_seen's key, which both warehouse backends run. Its
#: sightings are made distinct by GROUP BY: on a DuckLake (1.5.5) a MERGE whose source is a SELECT DISTINCT or a
#: UNION fails with "Out of buffer" once it updates rows (a second dump of a wiki), which tests/warehouse/
#: test_ducklake.py checks
_SIGHTINGS = """
MERGE INTO first_seen USING (
    SELECT lang, key_kind, key, dump_date FROM (
        SELECT lang, 'page_id' AS key_kind, CAST(page_id AS VARCHAR) AS key, ?::DATE AS dump_date FROM documents_raw
        WHERE lang = ? AND namespace = 0 AND NOT is_redirect
        UNION ALL
        SELECT lang, 'title', title, ?::DATE FROM documents_raw
        WHERE lang = ? AND namespace = 0 AND NOT is_redirect
    ) GROUP BY ALL
) AS s ON (first_seen.lang = s.lang AND first_seen.key_kind = s.key_kind AND first_seen.key = s.key)
WHEN MATCHED AND s.dump_date < first_seen.dump_date THEN UPDATE SET dump_date = s.dump_date
WHEN NOT MATCHED THEN INSERT *
"""


def dump_day(value: str) -> date:
    """A dump date as Wikimedia names it (``YYYYMMDD``) or ISO (``YYYY-MM-DD``)."""
    if _DAY.fullmatch(value):
        with suppress(ValueError):
            return date.fromisoformat(value)
    raise ConfigError(f"dump date {value!r}: expected YYYYMMDD or YYYY-MM-DD")


def record_appearance(wh: Warehouse, lang: str, dump_date: str | None) -> StageOutput:
    """Add the articles of ``lang``'s current documents as seen in ``dump_date``; return how many articles that was.

    A dump without a date (a local file whose name carries none) cannot date anything: nothing is recorded and the
    message says so, rather than stamping the articles with a made-up date.
    """
    if dump_date is None:
        return StageOutput(rows=0, message="the dump has no date: first appearance not recorded")
    day = dump_day(dump_date)
    with wh.transaction() as cur:
        upsert(cur, "appearance_dumps", [[lang, day]])
        guard(cur, "first_seen")
        cur.execute(_SIGHTINGS, [day, lang, day, lang])
        articles, new, earliest = cur.execute(
            "SELECT count(*), count(*) FILTER (first_dump = ?), (SELECT min(dump_date) FROM appearance_dumps WHERE lang = ?)"
            " FROM document_dates WHERE lang = ?", [day, lang, lang]).fetchone()
    if earliest == day:
        return StageOutput(rows=articles, message=f"earliest dump: {new} articles dated on or before {day.isoformat()}")
    return StageOutput(rows=articles, message=f"{new} articles new in {day.isoformat()}")


def appearance_digest(wh: Warehouse, langs: list[str]) -> str:
    """What the first-appearance dates of ``langs`` are, for the fingerprint of a stage that reads them.

    ``first_seen`` only gains rows and its dates only move back, so the number of sightings per language, key and
    date changes whenever any date does; counting them costs one pass over the table instead of reading every row.
    """
    return rows_digest(wh, "SELECT lang, key_kind, dump_date, count(*) FROM first_seen WHERE list_contains(?, lang)"
                           " GROUP BY ALL ORDER BY ALL", [sorted(langs)])
