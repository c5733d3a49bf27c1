"""Stream MediaWiki XML page dumps into document rows.

Dumps are many gigabytes, so the XML is read with expat block by block and only
one ``<page>`` (or the ``<siteinfo>``) is ever held as a tree. Expat's handlers
also tell exactly where each page starts, which is what an operator needs when
a page is unusable or the file is cut off. The same page logic serves whole
files (``iter_xml_pages``) and byte ranges of multistream dumps
(``tasks.dumps.multistream``) through ``iter_pages_from_blocks``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from xml.etree.ElementTree import Element, TreeBuilder
from xml.parsers import expat

from tqdm import tqdm

from tasks.dumps.compression import iter_decompressed_blocks
from tasks.dumps.lines import IssueSink
from tasks.errors import InputFormatError, TruncatedInputError
from tasks.text.languages import rule_for
from tasks.text.wikitext import WikitextReader, name_key

logger = logging.getLogger(__name__)

MAIN_NAMESPACE = 0
# Turns expat's (line, column, byte index) into words an operator can act on;
# whole files and multistream byte ranges describe positions differently.
Locator = Callable[[int, int, int], str]

_DISAMBIGUATION_SWITCH = re.compile(r"__DISAMBIG__", re.IGNORECASE)
# Expat errors that can only mean the document stopped early when they appear at the end of input.
_TRUNCATION_CODES = frozenset(
    expat.errors.codes[message]
    for message in (
        expat.errors.XML_ERROR_NO_ELEMENTS,
        expat.errors.XML_ERROR_UNCLOSED_TOKEN,
        expat.errors.XML_ERROR_PARTIAL_CHAR,
        expat.errors.XML_ERROR_UNCLOSED_CDATA_SECTION,
    )
)
_ROOT = "mediawiki"
_FRAGMENT_OPEN = f"<{_ROOT}>".encode()
_FRAGMENT_CLOSE = f"</{_ROOT}>".encode()


@dataclass(frozen=True)
class SiteInfo:
    """What a dump says about its wiki; ``namespaces`` maps key to localised name (main namespace = "")."""

    dbname: str
    base_url: str
    case: str
    namespaces: dict[int, str]


class _Position(NamedTuple):
    line: int
    column: int
    byte: int


class _Element(NamedTuple):
    element: Element
    start: _Position


def _local(name: str) -> str:
    """Drop the namespace URI expat prepends, so schema 0.10, 0.11 and later read alike."""
    return name.rpartition(" ")[2]


class _DumpReader:
    """Expat handlers that build one small tree per top-level ``<page>`` or ``<siteinfo>``.

    Everything outside those elements is ignored, so memory stays flat however
    long the dump is. ``byte_base`` shifts reported byte offsets when the
    caller fed bytes of its own before the real input.
    """

    def __init__(self, byte_base: int = 0) -> None:
        self._parser = expat.ParserCreate(namespace_separator=" ")
        self._parser.buffer_text = True
        self._parser.StartElementHandler = self._start
        self._parser.EndElementHandler = self._end
        self._byte_base = byte_base
        self._builder: TreeBuilder | None = None
        self._builder_depth = 0
        self._start_position = _Position(1, 0, 0)
        self._completed: list[_Element] = []
        self.root: tuple[str, _Position] | None = None
        self.depth = 0
        self.inside_page = False
        self.open_page_title: str | None = None

    def position(self) -> _Position:
        """Where expat is: inside a handler, the current event; between feeds, the end of the data parsed so far."""
        parser = self._parser
        return _Position(parser.CurrentLineNumber, parser.CurrentColumnNumber, parser.CurrentByteIndex + self._byte_base)

    def _start(self, name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        tag = _local(name)
        if self.root is None:
            self.root = (tag, self.position())
        if self._builder is None:
            if tag not in ("page", "siteinfo"):
                return
            self._builder = TreeBuilder()
            # Text goes straight to the tree builder (a C method: no Python call per piece of text), and only
            # inside the elements kept.
            self._parser.CharacterDataHandler = self._builder.data
            self._start_position = self.position()
            self.inside_page = tag == "page"
            self.open_page_title = None
        self._builder_depth += 1
        self._builder.start(tag, {_local(key): value for key, value in attributes.items()} if attributes else {})

    def _end(self, name: str) -> None:
        self.depth -= 1
        if self._builder is None:
            return
        element = self._builder.end(_local(name))
        self._builder_depth -= 1
        if self._builder_depth == 1 and element.tag == "title":
            self.open_page_title = element.text or ""
        if self._builder_depth == 0:
            self._completed.append(_Element(self._builder.close(), self._start_position))
            self._builder = None
            self._parser.CharacterDataHandler = None
            self.inside_page = False
            self.open_page_title = None

    def require_mediawiki_root(self, source: str, locate: Locator) -> None:
        """Any XML has elements, so only its root tells a page dump from another XML file (an HTML page, a feed)."""
        if self.root is not None and self.root[0] != _ROOT:
            tag, where = self.root
            raise InputFormatError(source, locate(*where), f"not a MediaWiki XML dump: the root element is <{tag}>, not <{_ROOT}>")

    def feed(self, data: bytes, final: bool = False) -> tuple[list[_Element], expat.ExpatError | None, _Position]:
        """Elements completed by ``data``, the error that stopped expat (if any) and where it stopped."""
        error = None
        try:
            self._parser.Parse(data, final)
        except expat.ExpatError as exc:
            error = exc
        parser = self._parser
        if error is not None:
            where = _Position(parser.ErrorLineNumber, parser.ErrorColumnNumber, parser.ErrorByteIndex + self._byte_base)
        else:
            where = self.position()
        completed, self._completed = self._completed, []
        return completed, error, where


def _siteinfo(element: Element) -> SiteInfo:
    namespaces = {
        int(ns.attrib["key"]): (ns.text or "").strip()
        for ns in element.iterfind("namespaces/namespace")
        if ns.attrib.get("key", "").lstrip("-").isdigit()
    }
    return SiteInfo(
        dbname=element.findtext("dbname", "").strip(),
        base_url=element.findtext("base", "").strip(),
        case=element.findtext("case", "").strip(),
        namespaces=namespaces,
    )


def _whole_file_locator(line: int, column: int, byte: int) -> str:
    return f"line {line}, column {column} (decompressed byte {byte})"


class _PageRows:
    """Turns completed ``<page>`` trees into document rows for one source and language."""

    def __init__(self, source: str, file_name: str, lang: str, locate: Locator, on_issue: IssueSink | None) -> None:
        self.source = source
        self.file_name = file_name
        self.lang = lang
        self.locate = locate
        self.on_issue = on_issue
        self.markers = frozenset(name_key(marker) for marker in rule_for(lang).disambiguation_markers)
        self.skipped_namespaces: Counter[int] = Counter()
        self._wiki: tuple[SiteInfo, WikitextReader] | None = None  # the reader of the siteinfo in force

    def _report(self, start: _Position, item: str | None, reason: str) -> None:
        issue = {"source": self.source, "position": self.locate(*start), "item": item, "reason": reason}
        if self.on_issue is None:
            logger.warning("skipped a page in %(source)s at %(position)s (%(item)s): %(reason)s", issue)
        else:
            self.on_issue(issue)

    def row(self, page: Element, start: _Position, siteinfo: SiteInfo) -> dict[str, Any] | None:
        """The document row of a main-namespace page; None for other namespaces and unusable pages."""
        title = page.findtext("title")
        page_id = (page.findtext("id") or "").strip()
        namespace = (page.findtext("ns") or "").strip()
        if not title or not title.strip():
            self._report(start, page_id or None, "page has no <title>")
            return None
        if not page_id.isdigit():
            self._report(start, title, f"page has no numeric <id> (got {page_id!r})")
            return None
        if not namespace.lstrip("-").isdigit():
            self._report(start, title, f"page has no numeric <ns> (got {namespace!r})")
            return None
        if int(namespace) != MAIN_NAMESPACE:
            self.skipped_namespaces[int(namespace)] += 1
            return None
        revisions = page.findall("revision")
        revision = revisions[-1] if revisions else Element("revision")
        redirect = page.find("redirect")
        is_redirect = redirect is not None
        text, is_disambiguation = "", False
        if not is_redirect:
            text, is_disambiguation = self._content(revision.findtext("text") or "", siteinfo)
        return {
            "lang": self.lang,
            "page_id": int(page_id),
            "title": title,
            "text": text,
            "qid": None,
            "namespace": MAIN_NAMESPACE,
            "is_redirect": is_redirect,
            "redirect_target": redirect.get("title") if redirect is not None else None,
            "is_disambiguation": is_disambiguation,
            "timestamp": revision.findtext("timestamp"),
            "source": self.file_name,
            "revision_id": int(revision_id) if (revision_id := (revision.findtext("id") or "").strip()).isdigit()
            else None,
        }

    def _content(self, wikitext: str, siteinfo: SiteInfo) -> tuple[str, bool]:
        """Cleaned text and the disambiguation flag, from a single parse of the wikitext."""
        if self._wiki is None or self._wiki[0] is not siteinfo:
            self._wiki = (siteinfo, WikitextReader(siteinfo.namespaces))
        page = self._wiki[1].read(wikitext)
        marked = (page.templates | page.categories) & self.markers
        return page.text, bool(marked) or bool(_DISAMBIGUATION_SWITCH.search(wikitext))


def _with_progress(blocks: Iterable[bytes], description: str) -> Iterator[bytes]:
    with tqdm(desc=description, unit="B", unit_scale=True, disable=None) as bar:
        for block in blocks:
            bar.update(len(block))
            yield block


def iter_pages_from_blocks(
    blocks: Iterable[bytes],
    *,
    source: str,
    lang: str,
    siteinfo: SiteInfo | None,
    locate: Locator,
    on_issue: IssueSink | None = None,
    fragment: bool = False,
    tail: bool = False,
) -> Iterator[dict[str, Any]]:
    """Document rows from decompressed XML blocks; all complete pages come out before any error is raised.

    ``siteinfo`` may be None when the blocks start with the dump's own
    ``<siteinfo>``. ``fragment`` says the blocks are a run of ``<page>``
    elements cut from a multistream dump rather than a whole document: they are
    wrapped in a root element here, and the wrapper is closed unless the run
    already ends with the dump's own ``</mediawiki>``. A ``tail`` fragment runs
    to the end of the file, so it must end with that ``</mediawiki>``: without
    it the file was cut between two streams, which no decompressor notices.
    """
    pages = _PageRows(source, Path(source).name, lang, locate, on_issue)
    reader = _DumpReader(byte_base=-len(_FRAGMENT_OPEN) if fragment else 0)
    current_siteinfo = siteinfo

    def rows(completed: list[_Element]) -> Iterator[dict[str, Any]]:
        nonlocal current_siteinfo
        for element, start in completed:
            if element.tag == "siteinfo":
                current_siteinfo = _siteinfo(element)
                continue
            if current_siteinfo is None:
                raise InputFormatError(source, locate(*start), "a <page> comes before the <siteinfo> that names the namespaces")
            row = pages.row(element, start, current_siteinfo)
            if row is not None:
                yield row

    def fail(error: expat.ExpatError, where: _Position, at_end: bool) -> InputFormatError:
        reason = expat.errors.messages[error.code]
        if at_end and error.code in _TRUNCATION_CODES:
            if reader.open_page_title is not None:
                cut = f"inside page {reader.open_page_title!r}"
            else:
                cut = "inside a <page> before its <title>" if reader.inside_page else "between elements, before the closing tags"
            return TruncatedInputError(source, locate(*where), f"input ends {cut} ({reason})", last_item=reader.open_page_title)
        return InputFormatError(source, locate(*where), f"malformed XML ({reason})")

    def cut_archive_named(blocks: Iterable[bytes]) -> Iterator[bytes]:
        # A cut archive stops the blocks before expat sees the end of the XML;
        # name the page it cut, as the XML error would have.
        try:
            yield from blocks
        except TruncatedInputError as exc:
            where = f"{locate(*reader.position())}; {exc.position}"
            raise TruncatedInputError(source, where, exc.reason, last_item=reader.open_page_title) from exc

    try:
        if fragment:
            reader.feed(_FRAGMENT_OPEN)
        for block in cut_archive_named(_with_progress(blocks, Path(source).name)):
            completed, error, where = reader.feed(block)
            reader.require_mediawiki_root(source, locate)
            yield from rows(completed)
            if error is not None:
                raise fail(error, where, at_end=False)
        if fragment and reader.depth == 1:
            if tail:
                raise TruncatedInputError(source, locate(*reader.position()),
                                          f"input ends between pages, without the dump's closing </{_ROOT}>")
            yield from rows(reader.feed(_FRAGMENT_CLOSE)[0])
        completed, error, where = reader.feed(b"", final=True)
        yield from rows(completed)
        if error is not None:
            raise fail(error, where, at_end=True)
    finally:
        if pages.skipped_namespaces:
            logger.debug("%s: skipped non-main pages by namespace: %s", source, dict(pages.skipped_namespaces))


def iter_xml_pages(path: Path, lang: str, *, on_issue: IssueSink | None = None) -> Iterator[dict[str, Any]]:
    """Document rows of the main-namespace pages of a (possibly compressed) XML page dump.

    An unknown ``lang`` fails here, before any reading. A file cut off
    mid-page yields every complete page, then raises ``TruncatedInputError``
    naming the file, the position and the cut page's title.
    """
    rule_for(lang)
    return iter_pages_from_blocks(
        iter_decompressed_blocks(path), source=str(path), lang=lang, siteinfo=None, locate=_whole_file_locator, on_issue=on_issue
    )


def parse_siteinfo(blocks: Iterable[bytes], *, source: str, locate: Locator) -> SiteInfo:
    """The ``<siteinfo>`` at the start of a dump; stops reading as soon as it is complete."""
    reader = _DumpReader()
    where = _Position(1, 0, 0)
    for block in blocks:
        completed, error, where = reader.feed(block)
        reader.require_mediawiki_root(source, locate)
        for element, _ in completed:
            if element.tag == "siteinfo":
                return _siteinfo(element)
        if error is not None:
            raise InputFormatError(source, locate(*where), f"malformed XML ({expat.errors.messages[error.code]})")
    raise InputFormatError(source, locate(*where), "no <siteinfo> element before the end of the input")


def read_xml_siteinfo(path: Path) -> SiteInfo:
    """The ``<siteinfo>`` of a (possibly compressed) XML page dump; reads only the head of the file."""
    return parse_siteinfo(iter_decompressed_blocks(path), source=str(path), locate=_whole_file_locator)
