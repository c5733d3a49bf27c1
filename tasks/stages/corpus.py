"""Prefect tasks of the corpus pipeline: thin wrappers that add fingerprints, caching and retries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from prefect.states import State

from tasks.catalog import APPEARANCE, DOCUMENTS, DOWNLOAD, SITELINKS
from tasks.dumps.appearance import record_appearance
from tasks.dumps.ingest import SitelinkMethod, fetch_files, ingest_documents, ingest_sitelinks, local_path
from tasks.dumps.sources import DocKind, DumpRequest, is_remote, local_requests, remote_requests, wikidata_request
from tasks.stage import StageConfig, StageOutput, StageRef, run_stage
from tasks.stages.orchestration import as_task_result, forced, shared_warehouse, stage_task

SitelinkChoice = Literal["auto", "cirrus", "page_props", "wikidata", "none"]



class DownloadConfig(StageConfig):
    """The identity of the files to fetch: names with published checksums, or local paths with size and mtime."""

    files: tuple[tuple[str, ...], ...]


class DocumentsConfig(StageConfig):
    max_docs: int | None = None


class AppearanceConfig(StageConfig):
    dump_date: str | None


class SitelinksConfig(StageConfig):
    method: SitelinkMethod


class DumpQuery(StageConfig):
    """What one download cell asks its source for.

    Discovery answers it before the cell has a fingerprint (the fingerprint
    covers the files found, so a new dump date recomputes); when no dump is
    found, the query is the config recorded with the failed cell, so its
    ``artifacts`` row says what was looked for.
    """

    source: str
    wiki: str
    kind: DocKind | Literal["wikidata"] | None = None
    date: str | None = None
    page_props: bool = False


class DownloadRef(StageRef):
    """A download cell's reference with the files it brought to disk, which the parse stages of its cell read."""

    requests: tuple[DumpRequest, ...]


def find_requests(query: DumpQuery) -> list[DumpRequest]:
    """Which files a download cell needs: discovered on a mirror, or found on local disk."""
    if query.kind == "wikidata":
        return [wikidata_request(query.source, query.date)]
    if is_remote(query.source):
        return remote_requests(query.source, query.wiki, query.kind or "cirrus", query.date, query.page_props)
    return local_requests(Path(query.source), query.wiki, query.kind, query.date, query.page_props)


def _identity(request: DumpRequest) -> tuple[str, ...]:
    if is_remote(request.location):
        return (request.role, request.name, request.date or "", request.sha1 or "", request.md5 or "")
    stat = Path(request.location).stat()
    return (request.role, request.name, request.location, str(stat.st_size), str(stat.st_mtime_ns))


def _raise(error: Exception) -> Callable[[str], StageOutput]:
    """A compute step that is ``error``: run through :func:`run_stage`, it records the cell as failed with the reason."""

    def compute(fingerprint: str) -> StageOutput:
        raise error

    return compute


@stage_task("download")
def download_stage(home: str, cell: str, query: DumpQuery, force: frozenset[str], run_id: str,
                   progress: bool = True) -> StageRef | State[StageRef]:
    """Find the cell's files and fetch them.

    Finding none (no complete dump on the mirror, no such file in the
    directory, a 404) fails this cell like a failed fetch: a ``failed``
    artifacts row with the reason, so the cell's own row says why rather than
    only the log. Transient errors are re-raised for the task's retries.
    """
    wh = shared_warehouse(home)
    try:
        requests = find_requests(query)
        config = DownloadConfig(files=tuple(_identity(r) for r in requests))
    except Exception as exc:
        return run_stage(wh, DOWNLOAD, cell, query, {}, _raise(exc), run_id=run_id)  # records the failure and re-raises
    lang = None if cell == "wikidata" else cell
    ref = run_stage(wh, DOWNLOAD, cell, config, {}, lambda fp: fetch_files(wh, query.wiki, lang, requests, progress=progress),
                    force=forced(DOWNLOAD.name, force), run_id=run_id)
    return as_task_result(DownloadRef(**ref.model_dump(), requests=tuple(requests)))


@stage_task("documents")
def documents_stage(home: str, cell: str, wiki: str, download: DownloadRef,
                    max_docs: int | None, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    files = {r.role: local_path(wh.home, wiki, r) for r in download.requests if r.role in {"cirrus", "xml", "xml_index"}}
    return as_task_result(run_stage(
        wh, DOCUMENTS, cell, DocumentsConfig(max_docs=max_docs), {"download": download},
        lambda fp: ingest_documents(wh, cell, files, fp, max_docs=max_docs),
        force=forced(DOCUMENTS.name, force), run_id=run_id))


@stage_task("appearance")
def appearance_stage(home: str, cell: str, documents: StageRef, download: DownloadRef, force: frozenset[str],
                     run_id: str) -> StageRef | State[StageRef]:
    """Record the cell's articles as seen in its dump's date (the newest date among the parsed files)."""
    wh = shared_warehouse(home)
    dates = [r.date for r in download.requests if r.role in {"cirrus", "xml"} and r.date]
    dump_date = max(dates) if dates else None
    return as_task_result(run_stage(
        wh, APPEARANCE, cell, AppearanceConfig(dump_date=dump_date), {"documents": documents},
        lambda fp: record_appearance(wh, cell, dump_date), force=forced(APPEARANCE.name, force), run_id=run_id))


@stage_task("sitelinks")
def sitelinks_stage(home: str, cell: str, wiki: str, requested: SitelinkChoice, documents: StageRef,
                    download: DownloadRef, wikidata: DownloadRef | None, force: frozenset[str],
                    run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    method = sitelink_method(requested, download.requests)
    inputs: dict[str, StageRef] = {"documents": documents}
    source_file = None
    if method == "page_props":
        inputs["page_props"] = download
        source_file = next((local_path(wh.home, wiki, r) for r in download.requests if r.role == "page_props"), None)
    elif method == "wikidata" and wikidata is not None:
        inputs["wikidata"] = wikidata
        source_file = local_path(wh.home, "wikidatawiki", wikidata.requests[0])
    return as_task_result(run_stage(
        wh, SITELINKS, cell, SitelinksConfig(method=method), inputs,
        lambda fp: ingest_sitelinks(wh, cell, wiki, method, fp, source_file=source_file),
        force=forced(SITELINKS.name, force), run_id=run_id))


def sitelink_method(requested: SitelinkChoice, requests: Sequence[DumpRequest]) -> SitelinkMethod:
    """``auto``: a CirrusSearch dump carries QIDs itself; an XML dump takes them from page_props when there is one."""
    if requested != "auto":
        return requested
    roles = {r.role for r in requests}
    return "cirrus" if "cirrus" in roles else "page_props" if "page_props" in roles else "none"
