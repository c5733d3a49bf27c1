"""Sitelinks (Wikidata item ↔ page of one wiki) from the page_props SQL dump or the Wikidata entity dump.

Sitelinks are what carry relevance labels across languages. ``page_props``
gives page ids for one wiki; the Wikidata dump gives titles for every wiki at
once but is hundreds of gigabytes, so its lines are only decoded when a cheap
byte search says they can hold a wanted wiki.

``page_props`` is read with a small tokenizer of MySQL ``INSERT`` rows rather
than mwsql, which splits rows on the text ``),(`` and so breaks on values
that contain it. The tokenizer understands quoted strings with backslash
escapes (mysqldump's only quoting style), ``NULL`` and numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from tasks.dumps.lines import IssueSink, issue_reporter, iter_lines
from tasks.errors import InputFormatError, TruncatedInputError

PAGE_PROPS_TABLE = b"page_props"
WIKIBASE_ITEM = b"'wikibase_item'"
DISAMBIGUATION_PROP = b"'disambiguation'"  # set by the Disambiguator extension on every wiki, whatever the template
DISAMBIGUATION_ITEM = "Q4167410"  # Wikidata's class "Wikimedia disambiguation page"

_INSERT = re.compile(rb"INSERT INTO `([^`]*)` VALUES ")
_CREATE = b"CREATE TABLE `page_props`"
_VALUE = rb"'[^'\\]*(?:\\.[^'\\]*)*'|NULL|[-+0-9.eE]+"
# (pp_page, pp_propname, pp_value[, pp_sortkey]): old dumps predate pp_sortkey.
_ROW = re.compile(rb"\((%s),(%s),(%s)(?:,(?:%s))?\)" % ((_VALUE,) * 4), re.DOTALL)
_ESCAPE = re.compile(rb"\\(.)", re.DOTALL)
_ESCAPED = {b"0": b"\0", b"b": b"\b", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"Z": b"\x1a"}
_QID = re.compile(r"Q[1-9][0-9]*")


def _sql_string(literal: bytes) -> str:
    """The text of a quoted MySQL literal; bytes that are not UTF-8 become U+FFFD rather than stopping the scan."""
    body = _ESCAPE.sub(lambda match: _ESCAPED.get(match.group(1), match.group(1)), literal[1:-1])
    return body.decode("utf-8", errors="replace")


def iter_page_props_sitelinks(path: Path, lang: str, *, on_issue: IssueSink | None = None) -> Iterator[dict[str, Any]]:
    """Sitelink rows (``SITELINK_COLUMNS``) from the ``wikibase_item`` rows of a page_props dump.

    A page's ``disambiguation`` property marks its row ``is_disambiguation``.
    mysqldump writes rows in primary-key order (page, then property name), so
    that property comes before the page's ``wikibase_item``; a flagged page
    whose item row came first, or that has none, gets a row of its own
    (no QID) at the end, so no flag is lost.

    An INSERT statement that stops matching the row grammar is reported from
    the byte where it broke and the rest of that statement is skipped; a file
    that ends inside a statement yields the complete rows before the cut, then
    raises ``TruncatedInputError``. A file with another table's rows, or with
    no ``page_props`` statement at all (not an SQL dump), is an ``InputFormatError``.
    """
    source, file_name = str(path), path.name
    report = issue_reporter(source, on_issue)
    last_page: str | None = None
    cut: str | None = None
    seen_table = False
    number = 0
    flagged: set[int] = set()
    marked: set[int] = set()  # flagged pages whose item row carried the flag
    try:
        for number, data, complete in iter_lines(path):
            head = _INSERT.match(data)
            if head is None:
                seen_table = seen_table or data.startswith(_CREATE)
                continue
            if head.group(1) != PAGE_PROPS_TABLE:
                table = head.group(1).decode("utf-8", errors="replace")
                raise InputFormatError(source, f"line {number}", f"INSERT INTO `{table}`, expected `page_props`: not a page_props dump")
            seen_table = True
            position = head.end()
            while row := _ROW.match(data, position):
                position = row.end()
                if row.group(2) == DISAMBIGUATION_PROP and row.group(1).isdigit():
                    flagged.add(int(row.group(1)))
                elif row.group(2) == WIKIBASE_ITEM:
                    page, qid = row.group(1).decode("ascii"), _sql_string(row.group(3))
                    if page.isdigit() and _QID.fullmatch(qid):
                        if int(page) in flagged:
                            marked.add(int(page))
                        yield {"qid": qid, "lang": lang, "page_id": int(page), "title": None, "source": file_name,
                               "is_disambiguation": int(page) in flagged}
                        last_page = page
                    else:
                        report(f"line {number}, byte {row.start()}", page, f"bad wikibase_item row (page {page!r}, value {qid!r})")
                if data[position : position + 1] != b",":
                    break
                position += 1
            if data[position:].strip() == b";":
                continue
            if not complete:
                cut = f"line {number}, byte {position}"
            else:
                found = data[position : position + 40].decode("utf-8", errors="replace")
                report(f"line {number}, byte {position}", last_page, f"malformed INSERT row at {found!r}; rest of the statement skipped")
    except TruncatedInputError as exc:
        raise TruncatedInputError(exc.source, exc.position, exc.reason, last_page) from exc
    for page_id in sorted(flagged - marked):
        yield {"qid": None, "lang": lang, "page_id": page_id, "title": None, "source": file_name, "is_disambiguation": True}
    if cut is not None:
        raise TruncatedInputError(source, cut, "the file ends inside an INSERT statement", last_page)
    if not seen_table:
        raise InputFormatError(source, f"line {number} (the end)",
                               "not a page_props SQL dump: no CREATE TABLE or INSERT INTO `page_props`")


def _is_disambiguation_item(entity: dict[str, Any]) -> bool:
    """Whether the entity states P31 (instance of) Wikimedia disambiguation page; odd claim shapes say no."""
    claims = entity.get("claims")
    statements = claims.get("P31") if isinstance(claims, dict) else None
    for statement in statements if isinstance(statements, list) else []:
        value = ((statement.get("mainsnak") or {}).get("datavalue") or {}).get("value") if isinstance(statement, dict) else None
        if isinstance(value, dict) and value.get("id") == DISAMBIGUATION_ITEM:
            return True
    return False


def _entity_sitelinks(entity: Any, wikis: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """(QID, [(lang, title)]) of one entity for the wanted wikis; ValueError names what is malformed."""
    if not isinstance(entity, dict) or not isinstance(entity.get("id"), str):
        raise ValueError("entity has no id")
    sitelinks = entity.get("sitelinks") or {}
    if not isinstance(sitelinks, dict):
        raise ValueError("sitelinks is not an object")
    links = []
    for site, lang in wikis.items():
        link = sitelinks.get(site)
        if link is None:
            continue
        if not isinstance(link, dict) or not isinstance(link.get("title"), str):
            raise ValueError(f"sitelink {site!r} has no title")
        links.append((lang, link["title"]))
    return entity["id"], links


def iter_wikidata_sitelinks(path: Path, wikis: Mapping[str, str], *, on_issue: IssueSink | None = None) -> Iterator[dict[str, Any]]:
    """Sitelink rows (``SITELINK_COLUMNS``, ``page_id`` None) for the wikis in ``wikis`` (dbname → lang).

    The dump is a JSON array with one entity per line. Lines that do not
    mention any wanted wiki in quotes are skipped undecoded (so a malformed
    line among them goes unnoticed: it could not have held a wanted sitelink).
    A decoded line that is malformed is reported and skipped; a file that
    ends before the closing ``]`` yields every complete entity, then raises
    ``TruncatedInputError`` naming the last QID read. A file that does not
    open with the array's ``[`` line is not this dump: ``InputFormatError``.
    """
    source, file_name = str(path), path.name
    report = issue_reporter(source, on_issue)
    needles = [orjson.dumps(site) for site in wikis]
    last_qid: str | None = None
    closed = False
    last_line = 0
    try:
        for number, data, complete in iter_lines(path):
            line = data.strip()
            if number == 1 and line != b"[":
                found = line[:60].decode("utf-8", errors="replace")
                raise InputFormatError(source, f"line {number}",
                                       f"not a Wikidata entity dump: it does not open with a [ line ({found!r})")
            last_line = number
            if line == b"]":
                closed = True
                continue
            if not any(needle in line for needle in needles):
                continue
            try:
                entity = orjson.loads(line.removesuffix(b","))
                qid, links = _entity_sitelinks(entity, wikis)
            except ValueError as exc:  # orjson's decode error is a ValueError too
                if complete:
                    report(f"line {number}", None, f"malformed entity ({exc})")
                continue
            disambiguation = _is_disambiguation_item(entity)
            for lang, title in links:
                yield {"qid": qid, "lang": lang, "page_id": None, "title": title, "source": file_name,
                       "is_disambiguation": disambiguation}
            last_qid = qid
    except TruncatedInputError as exc:
        raise TruncatedInputError(exc.source, exc.position, exc.reason, last_qid) from exc
    if not closed:
        raise TruncatedInputError(source, f"line {last_line}", "the file ends before the closing ] of the entity array", last_qid)
