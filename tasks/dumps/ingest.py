"""The corpus stages' logic: bring dump files to disk, parse them to the lake, derive sitelinks.

Parsing is fanned out over :mod:`tasks.compute` in units (one file, or one
byte range of a multistream XML dump); each unit writes its own Parquet
shards and reports its issues. Only the calling (flow) process registers the
shards in DuckDB, in one transaction per cell.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tasks import compute
from tasks.dumps.checksums import digest_file
from tasks.dumps.cirrus import iter_cirrus_documents
from tasks.dumps.download import download
from tasks.dumps.multistream import iter_chunk_pages, plan_chunks, read_index_offsets, read_siteinfo
from tasks.dumps.sitelinks import iter_page_props_sitelinks, iter_wikidata_sitelinks
from tasks.dumps.sources import DumpRequest
from tasks.dumps.xml_pages import SiteInfo, iter_xml_pages
from tasks.errors import ConfigError, InputFormatError, TruncatedInputError
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, Shard, ShardWriter, cell_dir

log = logging.getLogger(__name__)

SitelinkMethod = Literal["cirrus", "page_props", "wikidata", "none"]
CHUNK_BYTES = 64 << 20  # multistream bytes per parse unit: a few units per worker on real dumps


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
        cur.executemany(
            "INSERT OR REPLACE INTO dumps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())", rows)
    return StageOutput(rows=len(rows))


# -- documents ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseUnit:
    """One piece of parsing work for a worker: a whole file, or a byte range of a multistream file."""

    kind: Literal["cirrus", "xml", "xml_chunk"]
    path: str
    lang: str
    index: int
    start: int = 0
    end: int = 0
    siteinfo: SiteInfo | None = None


@dataclass
class UnitResult:
    shards: list[Shard]
    rows: int
    issues: list[dict[str, Any]] = field(default_factory=list)


def plan_units(lang: str, files: dict[str, Path], chunk_bytes: int | None = None) -> list[ParseUnit]:
    """Split one language's documents input into parse units (multistream: ~``CHUNK_BYTES`` each)."""
    if "cirrus" in files:
        return [ParseUnit("cirrus", str(files["cirrus"]), lang, 0)]
    xml = files.get("xml")
    if xml is None:
        raise ConfigError(f"{lang}: no documents dump among {sorted(files)}")
    index = files.get("xml_index")
    if index is None:
        return [ParseUnit("xml", str(xml), lang, 0)]
    offsets = read_index_offsets(index)
    siteinfo = read_siteinfo(xml, offsets[0])
    chunks = plan_chunks(offsets, xml.stat().st_size, chunk_bytes or CHUNK_BYTES)
    return [ParseUnit("xml_chunk", str(xml), lang, i, start, end, siteinfo) for i, (start, end) in enumerate(chunks)]


def _unit_pages(unit: ParseUnit, on_issue: Callable[[dict], None]) -> Iterator[dict]:
    path = Path(unit.path)
    if unit.kind == "cirrus":
        return iter_cirrus_documents(path, unit.lang, on_issue=on_issue)
    if unit.kind == "xml":
        return iter_xml_pages(path, unit.lang, on_issue=on_issue)
    assert unit.siteinfo is not None
    return iter_chunk_pages(path, unit.start, unit.end, unit.lang, unit.siteinfo, on_issue=on_issue)


def issue_from(exc: InputFormatError) -> dict[str, Any]:
    """An issue row for an input that broke off; a truncation is marked so the stage message names it."""
    truncated = isinstance(exc, TruncatedInputError)
    return {
        "source": exc.source,
        "position": exc.position,
        "item": exc.last_item if truncated else None,
        "reason": f"truncated: {exc.reason}" if truncated else exc.reason,
    }


def parse_unit(unit: ParseUnit, *, lake_root: Path, directory: Path, fingerprint: str, limit: int | None = None) -> UnitResult:
    """Parse one unit into shards (runs on a worker).

    A truncated or corrupt input keeps every complete record read before the
    break and reports the break as an issue with file and position.
    """
    issues: list[dict[str, Any]] = []
    writer = ShardWriter(lake_root, directory, LAKE_TABLES["documents_raw"], fingerprint, prefix=f"unit-{unit.index:05d}")
    try:
        for page in _unit_pages(unit, issues.append):
            writer.add(page)
            if limit is not None and writer.rows >= limit:
                break
    except InputFormatError as exc:
        issues.append(issue_from(exc))
    writer.flush()
    return UnitResult(writer.shards, writer.rows, issues)


def ingest_documents(wh: Warehouse, lang: str, files: dict[str, Path], fingerprint: str, *, max_docs: int | None) -> StageOutput:
    """Parse one language's dump into ``documents_raw`` and make it the cell's current content."""
    units = plan_units(lang, files)
    directory = cell_dir(wh.lake_root, "documents_raw", lang, fingerprint)
    if max_docs is None:
        results = compute.map_parallel(parse_unit, units, lake_root=wh.lake_root, directory=directory, fingerprint=fingerprint)
    else:  # a prefix of the dump, in file order: sequential so "the first N" is well defined
        results, remaining = [], max_docs
        for unit in units:
            if remaining <= 0:
                break
            result = parse_unit(unit, lake_root=wh.lake_root, directory=directory, fingerprint=fingerprint, limit=remaining)
            results.append(result)
            remaining -= result.rows
    shards = [shard for result in results for shard in result.shards]
    issues = [issue for result in results for issue in result.issues]
    wh.replace_cell("documents_raw", lang, fingerprint, shards)
    rows = sum(result.rows for result in results)
    message = "; ".join(f"{i['reason']} ({os.path.basename(str(i['source']))} at {i['position']})" for i in issues if str(i["reason"]).startswith("truncated"))
    log.info("documents[%s]: %d rows, %d issues", lang, rows, len(issues))
    return StageOutput(rows=rows, issues=issues, message=message)


# -- sitelinks ----------------------------------------------------------------------------------
def ingest_sitelinks(
    wh: Warehouse, lang: str, wiki: str, method: SitelinkMethod, fingerprint: str, *, source_file: Path | None,
) -> StageOutput:
    """Build one language's ``sitelinks`` cell from the chosen source.

    ``cirrus`` takes ``wikibase_item`` from the parsed documents; ``page_props``
    and ``wikidata`` stream their dumps. Wikidata gives titles only, so page
    ids are resolved against this language's documents by title.
    """
    directory = cell_dir(wh.lake_root, "sitelinks", lang, fingerprint)
    writer = ShardWriter(wh.lake_root, directory, LAKE_TABLES["sitelinks"], fingerprint)
    issues: list[dict[str, Any]] = []
    if method == "cirrus":
        rows = wh.query_dicts(
            "SELECT qid, lang, page_id, title, source FROM documents_raw"
            " WHERE lang = ? AND qid IS NOT NULL AND NOT is_redirect ORDER BY page_id", [lang])
        writer.extend(rows)
    elif method in {"page_props", "wikidata"}:
        if source_file is None:
            raise ConfigError(f"sitelinks[{lang}]: method {method!r} needs its dump file")
        titles = dict(wh.query(
            "SELECT page_id, title FROM documents_raw WHERE lang = ? AND NOT is_redirect AND page_id IS NOT NULL", [lang]))
        ids = {title: page_id for page_id, title in titles.items()}
        try:
            if method == "page_props":
                for row in iter_page_props_sitelinks(source_file, lang, on_issue=issues.append):
                    writer.add(row | {"title": titles.get(row["page_id"])})
            else:
                for row in iter_wikidata_sitelinks(source_file, {wiki: lang}, on_issue=issues.append):
                    writer.add(row | {"page_id": ids.get(row["title"])})
        except InputFormatError as exc:
            issues.append(issue_from(exc))
    writer.flush()
    wh.replace_cell("sitelinks", lang, fingerprint, writer.shards)
    return StageOutput(rows=writer.rows, issues=issues)
