"""Row shapes shared by every parser and by the warehouse.

Parsers yield plain dicts with exactly these keys so that the lake writer can
turn batches of them into Parquet shards with a fixed schema, whatever the
input format was.
"""

from __future__ import annotations

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
