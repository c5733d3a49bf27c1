"""The migrations as a DuckLake takes them: the same ``sql/NNN_name.sql`` files, less what a DuckLake cannot keep.

A DuckLake has no PRIMARY KEY, UNIQUE or CHECK constraints and no sequences ("not supported in DuckLake"); it
keeps every column, type, NOT NULL and literal default (a boolean one written as a quoted literal).  So one set of migration files serves both backends: on
a DuckLake the key and check clauses are left out here, and the guarantees they gave are kept by the writers
instead (an upsert is a MERGE in a transaction whose conflicts are replayed, a stage cell replaces its rows in
one guarded transaction, an artifact id is taken in that transaction: :mod:`tasks.warehouse.db`).
``tests/warehouse/test_ducklake.py`` checks that both schemas come out with the same columns.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"--[^\n]*")
_SEQUENCE = re.compile(r"CREATE\s+SEQUENCE\s+[^;]*;", re.IGNORECASE)
_NEXTVAL = re.compile(r"\s+DEFAULT\s+nextval\('[^']*'\)", re.IGNORECASE)
_TABLE_KEY = re.compile(r",\s*(?:PRIMARY\s+KEY|UNIQUE)\s*\([^)]*\)", re.IGNORECASE)
_COLUMN_KEY = re.compile(r"\s+PRIMARY\s+KEY\b(?!\s*\()", re.IGNORECASE)
_COLUMN_UNIQUE = re.compile(r"\s+UNIQUE\b(?!\s*\()", re.IGNORECASE)
_CHECK = re.compile(r"\s+CHECK\s*\(", re.IGNORECASE)
_BOOLEAN_DEFAULT = re.compile(r"\bDEFAULT\s+(TRUE|FALSE)\b", re.IGNORECASE)


def _without_checks(sql: str) -> str:
    """``sql`` less every ``CHECK (…)`` clause (balanced parentheses; the migrations quote no parentheses)."""
    out, position = [], 0
    for match in _CHECK.finditer(sql):
        if match.start() < position:
            continue
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            end += 1
        out.append(sql[position:match.start()])
        position = end
    return "".join(out) + sql[position:]


def for_ducklake(sql: str) -> str:
    """A migration's SQL for a DuckLake: comments, sequences, key and check constraints left out (a column that
    was a key stays NOT NULL)."""
    sql = _COMMENT.sub("", sql)
    sql = _SEQUENCE.sub("", sql)
    sql = _NEXTVAL.sub("", sql)
    sql = _TABLE_KEY.sub("", sql)
    sql = _COLUMN_KEY.sub(" NOT NULL", sql)  # what a key column keeps of its key
    sql = _COLUMN_UNIQUE.sub("", sql)
    # a DuckLake adds a column only with a literal default, and takes TRUE/FALSE for expressions: quoted, they cast
    sql = _BOOLEAN_DEFAULT.sub(lambda m: f"DEFAULT '{m.group(1).lower()}'", sql)
    return _without_checks(sql)
