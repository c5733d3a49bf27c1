"""Parse CirrusSearch content dumps into document rows.

A CirrusSearch dump is what Wikipedia's own search indexes (and what
CLIRMatrix used): plain text, the Wikidata item and the redirects of every
content page, in Elasticsearch bulk format, one JSON object per line with an
action line (carrying the page id) before each document. Lines are
independent, so a broken line costs one page and is reported, while a cut
archive keeps every page read before the cut.

The numbered-line reader here is shared with the sitelink parsers, whose dumps
are line-oriented too.

Speed: a document line is decoded by msgspec into a struct of only the fields
a row needs, so the bulk of each line (``source_text``, ``opening_text``,
links, headings) is skipped by the decoder instead of becoming Python strings;
this halves the parse. A line msgspec rejects (not an object, a field of an
unexpected shape) is decoded again with orjson and goes down the general path,
so what is reported for a bad line does not depend on the fast path.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import orjson

from tasks.dumps.lines import IssueSink, LineBlock, issue_reporter, iter_line_blocks
from tasks.errors import InputFormatError, TruncatedInputError
from tasks.text.languages import rule_for
from tasks.text.wikitext import cached_name_key, name_key

logger = logging.getLogger(__name__)

MAIN_NAMESPACE = 0


class _BadDocument(ValueError):
    """A decoded document that cannot become a row; the message is the issue's reason."""


class _Line(msgspec.Struct):
    """The fields of a bulk line that rows are made of; msgspec skips every other field unread.

    ``index`` stays UNSET on document lines, which is how an action line is
    told apart (``"index": null`` is still an action line, as with a dict).
    The rest default to None like ``dict.get`` would.
    """

    index: Any = msgspec.UNSET
    title: Any = None
    namespace: Any = None
    text: Any = None
    wikibase_item: Any = None
    timestamp: Any = None
    version: Any = None  # the revision id of the text
    redirect: Any = None
    category: Any = None
    template: Any = None

    @classmethod
    def of(cls, record: dict[str, Any]) -> _Line:
        """The struct of a line decoded as a dict (the general path)."""
        fields = {name: record.get(name) for name in cls.__struct_fields__ if name != "index"}
        return cls(index=record["index"] if "index" in record else msgspec.UNSET, **fields)


_decode_line = msgspec.json.Decoder(_Line).decode


@functools.lru_cache(maxsize=1 << 16)
def _bare_template_key(name: str) -> str:
    """A template's key without its (possibly localised) namespace prefix."""
    return name_key(name.partition(":")[2] or name)


def _is_disambiguation(document: _Line, markers: frozenset[str]) -> bool:
    """Categories come bare; templates carry a (possibly localised) namespace prefix, which is dropped. (Each name
    is keyed once per wiki, and the sets are checked by ``isdisjoint`` over a ``map``: no Python loop per name.)"""
    return not (markers.isdisjoint(map(cached_name_key, document.category or ()))
                and markers.isdisjoint(map(_bare_template_key, document.template or ())))


def _document_rows(document: _Line, page_id: Any, lang: str, file_name: str, markers: frozenset[str]) -> list[dict[str, Any]]:
    """The article row of a main-namespace document, then one row per main-namespace redirect to it."""
    title = document.title
    if not isinstance(title, str) or not title:
        raise _BadDocument("document has no title")
    try:
        numeric_id = int(page_id)
    except (TypeError, ValueError):
        raise _BadDocument(f"action line has no numeric page id (_id = {page_id!r})") from None
    article = {
        "lang": lang,
        "page_id": numeric_id,
        "title": title,
        "text": document.text or "",
        "qid": document.wikibase_item or None,
        "namespace": MAIN_NAMESPACE,
        "is_redirect": False,
        "redirect_target": None,
        "is_disambiguation": _is_disambiguation(document, markers),
        "timestamp": document.timestamp,
        "source": file_name,
        "revision_id": document.version if isinstance(document.version, int) else None,
    }
    redirects = [
        article | {"page_id": None, "title": redirect["title"], "text": "", "qid": None, "is_redirect": True,
                   "redirect_target": title, "is_disambiguation": False, "timestamp": None,
                   "revision_id": None}
        for redirect in document.redirect or ()
        if isinstance(redirect, dict) and redirect.get("namespace") == MAIN_NAMESPACE and redirect.get("title")
    ]
    return [article, *redirects]


@dataclass(frozen=True)
class Part:
    """The share of one dump a worker parses: the line blocks cut at compressed positions in (``start``, ``end``].

    A gzip stream can only be read from its start, so every part decompresses
    the file up to its own end (decompression is the cheap part) and parses
    only its blocks; the parts of a file together parse each block once, in
    file order. ``end`` is None for the last part, the only one that reads to
    the end of the file and so reports what happens there (a non-last part
    stops at the first block past its end, which the file's last block is).
    """

    start: int = 0
    end: int | None = None


WHOLE = Part()

_Action = tuple[int, Any]  # (line number, page id) of an action line awaiting its document


def iter_cirrus_documents(path: Path, lang: str, *, on_issue: IssueSink | None = None,
                          part: Part = WHOLE) -> Iterator[dict[str, Any]]:
    """Document rows (``DOCUMENT_COLUMNS``) of a CirrusSearch content dump, main namespace only.

    Each article row is followed by one row per redirect that points to it:
    the content dump has no redirect pages, only these lists. A line that
    is not JSON, an action line without its document or a document without
    its action line is reported through ``on_issue`` and skipped. A file that
    ends inside a line (a cut download) yields every complete document, then
    raises ``TruncatedInputError`` naming the line and the last title read.

    Lines are independent only inside a bulk file: when the first line is not an
    action line, the file is something else (an XML dump, an HTML error page),
    and ``InputFormatError`` says so at once instead of reporting every line.

    With a ``part``, only that part's rows and issues come out, and the parts
    of a file give together exactly what the whole file gives: a part takes
    over an action line left waiting by the lines before it, and leaves its
    own to the next part.
    """
    source, file_name = str(path), path.name
    report = issue_reporter(source, on_issue)
    markers = frozenset(name_key(marker) for marker in rule_for(lang).disambiguation_markers)
    action: _Action | None = None
    last_title: str | None = None
    cut_line: int | None = None
    skipped_namespaces: Counter[Any] = Counter()
    first = True
    try:
        for block in iter_line_blocks(path):
            if block.position <= part.start:
                first = first and not any(piece.strip() for piece in block.pieces)
                action = _waiting_action(block, action)
                continue
            if part.end is not None and block.position > part.end:
                return
            for number, data, complete in block.line_views():
                if _blank(data):
                    continue
                if first and complete:
                    _require_action_line(source, number, data)
                first = False
                record = _decode(data)
                if isinstance(record, _NotAnObject):
                    if record.error is None:
                        report(f"line {number}", None, f"expected a JSON object, found {record.found}")
                    elif not complete:
                        cut_line = number
                    else:
                        report(f"line {number}", None if action is None else str(action[1]), f"malformed JSON ({record.error})")
                        action = None
                    continue
                if record.index is not msgspec.UNSET:
                    if action is not None:
                        report(f"line {action[0]}", str(action[1]), "action line without its document")
                    action = (number, _page_id(record))
                    continue
                if action is None:
                    report(f"line {number}", record.title, "document without its action line (no page id)")
                    continue
                page_id, action = action[1], None
                namespace = record.namespace
                if namespace != MAIN_NAMESPACE:
                    if namespace is None:
                        report(f"line {number}", record.title, "document has no namespace")
                    skipped_namespaces[namespace] += 1
                    continue
                try:
                    rows = _document_rows(record, page_id, lang, file_name, markers)
                except _BadDocument as exc:
                    report(f"line {number}", record.title or str(page_id), str(exc))
                    continue
                yield from rows
                last_title = rows[0]["title"]
    except TruncatedInputError as exc:
        raise TruncatedInputError(exc.source, exc.position, exc.reason, last_title) from exc
    finally:
        if skipped_namespaces:
            logger.debug("%s: skipped documents by namespace: %s", source, dict(skipped_namespaces))
    if cut_line is not None:
        raise TruncatedInputError(source, f"line {cut_line}", "the file ends inside a line", last_title)
    if action is not None:
        report(f"line {action[0]}", str(action[1]), "action line without its document at the end of the file")


_WHITESPACE = frozenset(b" \t\r\n\x0b\x0c")  # what bytes.strip removes


def _blank(line: bytes | memoryview) -> bool:
    """Whether a line holds only whitespace; a JSON line's first byte says so at once."""
    return not line or (line[0] in _WHITESPACE and not bytes(line).strip())


def _page_id(action: _Line) -> Any:
    meta = action.index
    return meta.get("_id") if isinstance(meta, dict) else None


def _waiting_action(block: LineBlock, before: _Action | None) -> _Action | None:
    """The action line still waiting for its document after ``block``, given the one waiting before it.

    Only the block's last line that is an action line, a document or malformed
    JSON decides (an action line starts a wait, the others end it); blank lines
    and JSON that is not an object leave the wait as it was.
    """
    for number, data in block.lines_backwards():
        if not data.strip():
            continue
        record = _decode(data)
        if isinstance(record, _NotAnObject):
            if record.error is None:
                continue
            return None
        return (number, _page_id(record)) if record.index is not msgspec.UNSET else None
    return before


class _NotAnObject(NamedTuple):
    """A line with no fields: ``error`` when it is not JSON, else the JSON type it holds (``found``)."""

    error: orjson.JSONDecodeError | None
    found: str = ""


def _decode(data: bytes | memoryview) -> _Line | _NotAnObject:
    """A line's fields: msgspec's struct, or orjson's dict as one when msgspec rejects the line (so what is
    reported for a bad line does not depend on the fast path); or why the line has none."""
    try:
        return _decode_line(data)
    except msgspec.DecodeError:
        try:
            general = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return _NotAnObject(exc)
        if not isinstance(general, dict):
            return _NotAnObject(None, type(general).__name__)
        return _Line.of(general)


def _require_action_line(source: str, number: int, data: bytes | memoryview) -> None:
    """A bulk file starts with an action line; anything else there means another kind of file."""
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError:
        record = None
    if not (isinstance(record, dict) and "index" in record):
        found = bytes(data[:60]).decode("utf-8", errors="replace")
        raise InputFormatError(
            source, f"line {number}", f'not a CirrusSearch bulk dump: the first line is not an {{"index": …}} action line ({found!r})')
