"""Row shapes shared by every parser (the lake's document and sitelink schemas, :mod:`tasks.warehouse.lake`).

Parsers yield plain dicts with exactly these keys; :func:`document_batches`
turns them into bounded Arrow tables that become Parquet shards with a fixed
schema, whatever the input format was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from tasks.warehouse.lake import DOCUMENT_SCHEMA, SITELINK_SCHEMA

DOCUMENT_COLUMNS: tuple[str, ...] = tuple(DOCUMENT_SCHEMA.names)

SITELINK_COLUMNS: tuple[str, ...] = tuple(SITELINK_SCHEMA.names)


ISSUE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),  # file the problem was found in
        ("position", pa.string()),  # byte offset / line, as the parser knows it
        ("item", pa.string()),  # page title or id, when known
        ("reason", pa.string()),
    ]
)


# Text per batch: bounds a parse unit's memory whatever the dump's size; small enough that writing the last batch
# after the parse ends is short (batches are the row groups of a shard, tasks/dumps/ingest.py: parse_unit). On the
# small dumps of benchmarks/parse_throughput.py, 2 M characters took 5% off the XML ingest against 4 M; 1 M took
# 8% but added 4% to a CirrusSearch file's, in writing more row groups.
BATCH_TEXT_CHARS = 2 << 20
BATCH_ROWS = 100_000


def document_batches(
    rows: Iterable[dict[str, Any]], *, max_text_chars: int = BATCH_TEXT_CHARS, max_rows: int = BATCH_ROWS,
) -> Iterator[pa.Table]:
    """``DOCUMENT_SCHEMA`` tables of the rows in order, each cut at ``max_text_chars`` of text or ``max_rows``.

    Rows are gathered as they come and turned into column lists when a batch
    is cut, one comprehension per column (two thirds of the cost of appending
    each row's values column by column, on a CirrusSearch file); Arrow then
    builds each column in one call. When ``rows`` raises, the rows read before
    are yielded first, so a parse unit keeps what preceded a cut.
    """
    batch: list[dict[str, Any]] = []
    text_chars = 0

    def take() -> pa.Table:
        nonlocal text_chars
        table = pa.Table.from_pydict({name: [row[name] for row in batch] for name in DOCUMENT_COLUMNS},
                                     schema=DOCUMENT_SCHEMA)
        batch.clear()
        text_chars = 0
        return table

    try:
        for row in rows:
            batch.append(row)
            text_chars += len(row["text"])
            if text_chars >= max_text_chars or len(batch) >= max_rows:
                yield take()
    except Exception:
        if batch:
            yield take()
        raise
    if batch:
        yield take()
