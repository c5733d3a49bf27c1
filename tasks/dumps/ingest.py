"""The corpus stages' logic: bring dump files to disk, parse them to the lake, derive sitelinks.

Parsing is fanned out over :mod:`tasks.compute` in units (one file, or one
byte range of a multistream XML dump); each unit writes its own Parquet
shards and reports its issues. Only the calling (flow) process registers the
shards in DuckDB, in one transaction per cell.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from upath import UPath

from tasks import compute
from tasks.dumps.checksums import digest_file
from tasks.dumps.cirrus import WHOLE, Part, iter_cirrus_documents
from tasks.dumps.download import download
from tasks.dumps.multistream import iter_chunk_pages, plan_chunks, read_index_offsets, read_siteinfo
from tasks.dumps.records import BATCH_TEXT_CHARS, document_batches
from tasks.dumps.sitelinks import iter_page_props_sitelinks, iter_wikidata_sitelinks
from tasks.dumps.sources import DumpRequest
from tasks.dumps.xml_pages import SiteInfo, iter_xml_pages
from tasks.errors import ConfigError, InputFormatError, TruncatedInputError
from tasks.progress import Progress
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse, upsert
from tasks.warehouse.lake import LAKE_TABLES, Shard, ShardWriter, cell_dir

log = logging.getLogger(__name__)

SitelinkMethod = Literal["cirrus", "page_props", "wikidata", "none"]
TRUNCATED = "truncated: "  # how a cut input's issue reason starts, so the stage message can pick the cuts out
CHUNK_BYTES = 64 << 20  # multistream bytes per parse unit: a few units per worker on real dumps
PART_MIN_BYTES = 8 << 20  # a CirrusSearch file is split in parts of at least this many compressed bytes
SKIP_COST = 0.27  # what skipping a byte costs, as a share of parsing it (benchmarks/README.md, parse_throughput)
SHARD_TEXT_CHARS = 32 << 20  # text per documents shard
GROUPS_PER_SHARD = SHARD_TEXT_CHARS // BATCH_TEXT_CHARS  # batches (row groups) per documents shard


# -- download ------------------------------------------------------------------------------
def local_path(home: Path, wiki: str, request: DumpRequest) -> Path:
    """Where a requested file lives on disk once fetched (local sources stay where they are)."""
    if request.location.startswith(("http://", "https://", "file://")):
        return home / "dumps" / wiki / (request.date or "undated") / request.name
    return Path(request.location)


def fetch_files(wh: Warehouse, wiki: str, lang: str | None, requests: Sequence[DumpRequest], *, progress: bool) -> StageOutput:
    """Download (or locate) every requested file and register it in ``dumps``.

    A remote file is registered only after its published checksum matched;
    a local file is registered with its computed SHA-1 and ``verified = false``.
    """
    rows = []
    for request in requests:
        target = local_path(wh.home, wiki, request)
        if target == Path(request.location):
            if not target.is_file():
                raise ConfigError(f"{target}: dump file is missing")
            digests, size = digest_file(target)
            sha1, md5, verified = digests.sha1, digests.md5, False
        else:
            result = download(request.location, target.parent, sha1=request.sha1, md5=request.md5, progress=progress)
            sha1, md5, size = result.sha1, result.md5, result.size
            verified = bool(request.sha1 or request.md5)
        stat = target.stat()
        rows.append([wiki, lang, request.role, request.date, request.name, request.location, str(target),
                     size, stat.st_mtime_ns, sha1, md5, verified])
    with wh.transaction() as cur:
        upsert(cur, "dumps", rows, then="now()")
    return StageOutput(rows=len(rows))


# -- documents ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseUnit:
    """One piece of parsing work for a worker: a whole file, a byte range of a multistream file, or a part of a
    CirrusSearch file."""

    kind: Literal["cirrus", "xml", "xml_chunk"]
    path: str
    lang: str
    index: int
    start: int = 0
    end: int = 0
    siteinfo: SiteInfo | None = None
    part: Part = WHOLE


@dataclass(frozen=True)
class InputBreak:
    """Where and why an input stopped being readable, as plain data.

    Parse units run on Dask workers and their results travel back pickled; the
    input errors cannot make that trip (their constructors take more than the
    message), so a unit reports its break in this form and the flow process
    turns it back into the error or the issue with :meth:`error` / :meth:`issue`.
    """

    source: str
    position: str | None
    reason: str
    truncated: bool
    last_item: str | None = None

    @classmethod
    def of(cls, exc: InputFormatError) -> InputBreak:
        if isinstance(exc, TruncatedInputError):
            return cls(exc.source, exc.position, exc.reason, True, exc.last_item)
        return cls(exc.source, exc.position, exc.reason, False)

    def error(self) -> InputFormatError:
        if self.truncated:
            return TruncatedInputError(self.source, self.position, self.reason, self.last_item)
        return InputFormatError(self.source, self.position, self.reason)

    def issue(self) -> dict[str, Any]:
        """The ``ingest_issues`` row of a cut input."""
        return {"source": self.source, "position": self.position, "item": self.last_item, "reason": TRUNCATED + self.reason}


@dataclass
class UnitResult:
    shards: list[Shard]
    rows: int
    issues: list[dict[str, Any]] = field(default_factory=list)
    stopped: InputBreak | None = None
    last_title: str | None = None  # of the unit's last article row: the last item read, when a later unit is cut


def _breaks(results: Sequence[UnitResult]) -> list[InputBreak]:
    """The units' breaks in file order; a cut unit that read no article names the last one read before it."""
    breaks, last_title = [], None
    for result in results:
        stop = result.stopped
        if stop is not None:
            breaks.append(replace(stop, last_item=last_title) if stop.truncated and stop.last_item is None else stop)
        last_title = result.last_title or last_title
    return breaks


def plan_units(lang: str, files: dict[str, Path], chunk_bytes: int | None = None, *, parallelism: int = 1) -> list[ParseUnit]:
    """Split one language's documents input into parse units (multistream: ~``CHUNK_BYTES`` each).

    Streams the index places at or past the end of the data file are left out
    (a cut download): the last unit then runs into the cut and reports it.
    A CirrusSearch file is one gzip stream, which every part must decompress
    from its start up to its own end (:class:`Part`), so it is split in as
    many parts as tasks can run at once (``parallelism``), each of at least
    ``PART_MIN_BYTES``: parsing, not decompressing, is what the parts share.
    """
    if "cirrus" in files:
        path = files["cirrus"]
        size = path.stat().st_size
        count = max(1, min(parallelism, size // PART_MIN_BYTES))
        ends = [round(size * share) for share in part_ends(count)]
        return [ParseUnit("cirrus", str(path), lang, k, part=Part(start, end if k < count - 1 else None))
                for k, (start, end) in enumerate(zip([0, *ends[:-1]], ends, strict=True))]
    xml = files.get("xml")
    if xml is None:
        raise ConfigError(f"{lang}: no documents dump among {sorted(files)}")
    index = files.get("xml_index")
    if index is None:
        return [ParseUnit("xml", str(xml), lang, 0)]
    indexed = read_index_offsets(index)
    size = xml.stat().st_size
    offsets = [offset for offset in indexed if offset < size]
    if not offsets:
        raise TruncatedInputError(str(xml), f"byte {size}",
                                  f"the file ends before its first page stream (byte {indexed[0]} by {index.name})")
    siteinfo = read_siteinfo(xml, offsets[0])
    chunks = plan_chunks(offsets, size, chunk_bytes or CHUNK_BYTES)
    return [ParseUnit("xml_chunk", str(xml), lang, i, start, end, siteinfo) for i, (start, end) in enumerate(chunks)]


def part_ends(count: int) -> list[float]:
    """Where the ``count`` parts of a CirrusSearch file end, as shares of its size, so that they cost the same.

    Part k skips the file up to its start and parses to its end, so it costs
    ``SKIP_COST * start + (end - start)``; equal costs C give
    ``end_k = C + (1 - SKIP_COST) * end_(k-1)``, and the last part ending at 1 gives C.
    """
    keep = 1 - SKIP_COST
    cost = SKIP_COST / (1 - keep ** count)
    ends = [0.0]
    for _ in range(count):
        ends.append(cost + keep * ends[-1])
    return ends[1:]


def _unit_pages(unit: ParseUnit, on_issue: Callable[[dict], None]) -> Iterator[dict]:
    path = Path(unit.path)
    if unit.kind == "cirrus":
        return iter_cirrus_documents(path, unit.lang, on_issue=on_issue, part=unit.part)
    if unit.kind == "xml":
        return iter_xml_pages(path, unit.lang, on_issue=on_issue)
    assert unit.siteinfo is not None
    return iter_chunk_pages(path, unit.start, unit.end, unit.lang, unit.siteinfo, on_issue=on_issue)


def parse_unit(unit: ParseUnit, *, lake_root: UPath, directory: UPath, fingerprint: str, limit: int | None = None) -> UnitResult:
    """Parse one unit into shards (runs on a worker).

    An input that breaks off stops the unit with the shards of the records
    read before the break and the break itself; whether they are kept is the
    cell's decision (:func:`settle_breaks`), since only it sees every unit.
    Batches are bounded (:func:`document_batches`), so memory does not grow
    with the unit's size, and each is written as a row group of the open
    shard by a second thread while the next is parsed (Parquet encoding
    releases the GIL); at most one batch waits for the writer. Row groups are
    a few MB of text, so what is left to write once the parse ends is small.
    """
    issues: list[dict[str, Any]] = []
    stopped: InputBreak | None = None
    writer = ShardWriter(lake_root, directory, LAKE_TABLES["documents_raw"], fingerprint, prefix=f"unit-{unit.index:05d}",
                         groups_per_shard=GROUPS_PER_SHARD)
    pages = _unit_pages(unit, issues.append)
    if limit is not None:  # stop the parser at the limit, so nothing after it is read or reported
        pages = itertools.islice(pages, limit)
    last_title: str | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="shard-writer") as shard_writer:
        writing: Future[None] | None = None
        try:
            for batch in document_batches(pages):
                if writing is not None:
                    writing.result()
                writing = shard_writer.submit(writer.add_row_group, batch)
                articles = np.flatnonzero(~batch["is_redirect"].to_numpy())
                last_title = batch["title"][articles[-1]].as_py() if len(articles) else last_title
        except InputFormatError as exc:
            stopped = InputBreak.of(exc)
        except BaseException:
            if writing is not None:
                wait([writing])
            writer.discard_shard()
            raise
        if writing is not None:
            writing.result()
    writer.close_shard()
    return UnitResult(writer.shards, writer.rows, issues, stopped, last_title)


def settle_breaks(breaks: Sequence[InputBreak], kept: int) -> list[dict[str, Any]]:
    """The issue rows of inputs that broke off, or the error that fails the cell.

    The line between keeping and failing: a file that is cut short (a killed
    download: the compressed stream, the last line or the last page just ends)
    is a prefix of a good dump, so every complete record before the cut is kept
    and the cut is filed as a ``truncated:`` issue. Anything else — not this
    compression or format at all, a failed integrity check, malformed XML, the
    wrong SQL table — means the bytes cannot be trusted before the fault either
    (gzip checks its CRC only at the end of a member), so the cell fails and its
    previous content stays current. A cut with nothing kept before it fails
    too: an empty cell would pass for a language without articles.
    """
    for stop in breaks:
        if not stop.truncated:
            raise stop.error()
    if breaks and kept == 0:
        first = breaks[0]
        raise TruncatedInputError(first.source, first.position, f"{first.reason}; nothing could be kept from before the cut",
                                  first.last_item)
    return [stop.issue() for stop in breaks]


def issues_message(issues: Sequence[dict[str, Any]]) -> str:
    """The stage message for a cell computed with issues: every cut, then how many items were skipped and the first.

    It is what ``artifacts.message`` and the printed stage table show, so an
    operator learns of a cut or of skipped items without reading the log.
    """
    def where(issue: dict[str, Any]) -> str:
        return f"{os.path.basename(str(issue['source']))} at {issue['position']}"

    cuts = [i for i in issues if str(i["reason"]).startswith(TRUNCATED)]
    skipped = [i for i in issues if not str(i["reason"]).startswith(TRUNCATED)]
    parts = [f"{i['reason']} ({where(i)})" for i in cuts]
    if skipped:
        first = skipped[0]
        parts.append(f"{len(skipped)} item(s) skipped, see ingest_issues; first: {first['reason']} ({where(first)})")
    return "; ".join(parts)


def ingest_documents(wh: Warehouse, lang: str, files: dict[str, Path], fingerprint: str, *, max_docs: int | None) -> StageOutput:
    """Parse one language's dump into ``documents_raw`` and make it the cell's current content.

    Raises the input error instead when :func:`settle_breaks` says the input
    cannot be kept; the cell's previous content then stays current.
    """
    units = plan_units(lang, files, parallelism=1 if max_docs is not None else compute.parallelism())
    directory = cell_dir(wh.lake_root, "documents_raw", lang, fingerprint)
    with Progress(f"documents {lang}", len(units), "doc", parts="part") as progress:
        if max_docs is None:
            results = compute.map_parallel(parse_unit, units, progress=progress, count=lambda _, result: result.rows,
                                           lake_root=wh.lake_root, directory=directory, fingerprint=fingerprint)
        else:  # a prefix of the dump, in file order: sequential so "the first N" is well defined
            results, remaining = [], max_docs
            for unit in units:
                if remaining <= 0:
                    break
                result = parse_unit(unit, lake_root=wh.lake_root, directory=directory, fingerprint=fingerprint,
                                    limit=remaining)
                results.append(result)
                remaining -= result.rows
                progress.advance(1, result.rows)
    rows = sum(result.rows for result in results)
    issues = [issue for result in results for issue in result.issues]
    issues += settle_breaks(_breaks(results), rows)
    wh.replace_cell("documents_raw", lang, fingerprint, [shard for result in results for shard in result.shards])
    log.info("documents[%s]: %d rows, %d issues", lang, rows, len(issues))
    return StageOutput(rows=rows, issues=issues, message=issues_message(issues))


# -- sitelinks ----------------------------------------------------------------------------------
def ingest_sitelinks(
    wh: Warehouse, lang: str, wiki: str, method: SitelinkMethod, fingerprint: str, *, source_file: Path | None,
) -> StageOutput:
    """Build one language's ``sitelinks`` cell from the chosen source.

    ``cirrus`` takes ``wikibase_item`` from the parsed documents; ``page_props``
    and ``wikidata`` stream their dumps, whose breaks are settled like the
    documents' (:func:`settle_breaks`). Wikidata gives titles only, so page
    ids are resolved against this language's documents by title.
    """
    directory = cell_dir(wh.lake_root, "sitelinks", lang, fingerprint)
    writer = ShardWriter(wh.lake_root, directory, LAKE_TABLES["sitelinks"], fingerprint)
    issues: list[dict[str, Any]] = []
    if method == "cirrus":
        rows = wh.query_dicts(
            "SELECT qid, lang, page_id, title, source, FALSE AS is_disambiguation FROM documents_raw"
            " WHERE lang = ? AND qid IS NOT NULL AND NOT is_redirect ORDER BY page_id", [lang])
        writer.extend(rows)
    elif method in {"page_props", "wikidata"}:
        if source_file is None:
            raise ConfigError(f"sitelinks[{lang}]: method {method!r} needs its dump file")
        titles = dict(wh.query(
            "SELECT page_id, title FROM documents_raw WHERE lang = ? AND NOT is_redirect AND page_id IS NOT NULL", [lang]))
        ids = {title: page_id for page_id, title in titles.items()}
        stopped: list[InputBreak] = []
        try:
            if method == "page_props":
                for row in iter_page_props_sitelinks(source_file, lang, on_issue=issues.append):
                    writer.add(row | {"title": titles.get(row["page_id"])})
            else:
                for row in iter_wikidata_sitelinks(source_file, {wiki: lang}, on_issue=issues.append):
                    writer.add(row | {"page_id": ids.get(row["title"])})
        except InputFormatError as exc:
            stopped.append(InputBreak.of(exc))
        issues += settle_breaks(stopped, writer.rows)
    writer.flush()
    wh.replace_cell("sitelinks", lang, fingerprint, writer.shards)
    return StageOutput(rows=writer.rows, issues=issues, message=issues_message(issues))
