"""Row shapes shared by every parser and by the warehouse.

Parsers yield plain dicts with exactly these keys; :func:`document_batches`
turns them into bounded Arrow tables that become Parquet shards with a fixed
schema, whatever the input format was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

DOCUMENT_SCHEMA = pa.schema(
    [
        ("lang", pa.string()),
        ("page_id", pa.int64()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("qid", pa.string()),  # Wikidata item id ("Q42"), null when unknown
        ("namespace", pa.int32()),
        ("is_redirect", pa.bool_()),
        ("redirect_target", pa.string()),  # null unless is_redirect
        ("is_disambiguation", pa.bool_()),
        ("timestamp", pa.string()),  # ISO-8601 of the revision / index time, null when unknown
        ("source", pa.string()),  # file name the row came from
    ]
)
DOCUMENT_COLUMNS: tuple[str, ...] = tuple(DOCUMENT_SCHEMA.names)

SITELINK_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("lang", pa.string()),
        ("page_id", pa.int64()),  # null when the source gives only a title (Wikidata JSON)
        ("title", pa.string()),
        ("source", pa.string()),
        # the page is a disambiguation page by a language-independent signal: the page property MediaWiki's
        # Disambiguator sets, or a Wikidata item that is an instance of Wikimedia disambiguation page (Q4167410)
        ("is_disambiguation", pa.bool_()),
    ]
)
SITELINK_COLUMNS: tuple[str, ...] = tuple(SITELINK_SCHEMA.names)


ISSUE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),  # file the problem was found in
        ("position", pa.string()),  # byte offset / line, as the parser knows it
        ("item", pa.string()),  # page title or id, when known
        ("reason", pa.string()),
    ]
)


BATCH_TEXT_CHARS = 32 << 20  # text per batch: bounds a parse unit's memory whatever the dump's size
BATCH_ROWS = 100_000


def document_batches(
    rows: Iterable[dict[str, Any]], *, max_text_chars: int = BATCH_TEXT_CHARS, max_rows: int = BATCH_ROWS,
) -> Iterator[pa.Table]:
    """``DOCUMENT_SCHEMA`` tables of the rows in order, each cut at ``max_text_chars`` of text or ``max_rows``.

    Rows go straight into column lists (Arrow builds each column in one call
    instead of walking every row's dict per column). When ``rows`` raises, the
    rows read before are yielded first, so a parse unit keeps what preceded a cut.
    """
    columns: dict[str, list[Any]] = {name: [] for name in DOCUMENT_COLUMNS}
    appends = [(name, columns[name].append) for name in DOCUMENT_COLUMNS]
    text_chars = 0

    def take() -> pa.Table:
        nonlocal text_chars
        table = pa.Table.from_pydict(columns, schema=DOCUMENT_SCHEMA)
        for values in columns.values():
            values.clear()
        text_chars = 0
        return table

    try:
        for row in rows:
            for name, append in appends:
                append(row[name])
            text_chars += len(row["text"])
            if text_chars >= max_text_chars or len(columns["text"]) >= max_rows:
                yield take()
    except Exception:
        if columns["text"]:
            yield take()
        raise
    if columns["text"]:
        yield take()
