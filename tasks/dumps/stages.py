"""Prefect tasks of the corpus pipeline: thin wrappers that add fingerprints, caching and retries."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import task
from prefect.states import State

from tasks.dumps.ingest import SitelinkMethod, fetch_files, ingest_documents, ingest_sitelinks, local_path
from tasks.dumps.sources import DocKind, DumpRequest, is_remote, local_requests, remote_requests, wikidata_request
from tasks.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.retry import is_transient
from tasks.stage import Stage, StageConfig, StageRef, run_stage

SitelinkChoice = Literal["auto", "cirrus", "page_props", "wikidata", "none"]

DOWNLOAD = Stage("download", 1)
DOCUMENTS = Stage("documents", 1, upstream=("download",))
SITELINKS = Stage("sitelinks", 1, upstream=("documents", "download"))
CORPUS_STAGES = (DOWNLOAD, DOCUMENTS, SITELINKS)


class DownloadConfig(StageConfig):
    """The identity of the files to fetch: names with published checksums, or local paths with size and mtime."""

    files: tuple[tuple[str, ...], ...]


class DocumentsConfig(StageConfig):
    max_docs: int | None = None


class SitelinksConfig(StageConfig):
    method: SitelinkMethod


def _identity(request: DumpRequest) -> tuple[str, ...]:
    if is_remote(request.location):
        return (request.role, request.name, request.date or "", request.sha1 or "", request.md5 or "")
    stat = Path(request.location).stat()
    return (request.role, request.name, request.location, str(stat.st_size), str(stat.st_mtime_ns))


@task(name="locate", retries=3, retry_delay_seconds=[2, 10, 30], retry_jitter_factor=0.5,
      retry_condition_fn=lambda task, run, state: is_transient(state.result(raise_on_failure=False)),
      task_run_name="locate[{lang}]")
def locate(source: str, lang: str, wiki: str, kind: DocKind | None, date: str | None, page_props: bool) -> list[DumpRequest]:
    """Which files one language needs: discovered on a mirror, or found on local disk."""
    if is_remote(source):
        return remote_requests(source, wiki, kind or "cirrus", date, page_props)
    return local_requests(Path(source), wiki, kind, date, page_props)


@task(name="locate-wikidata", retries=3, retry_delay_seconds=[2, 10, 30], retry_jitter_factor=0.5,
      retry_condition_fn=lambda task, run, state: is_transient(state.result(raise_on_failure=False)))
def locate_wikidata(source: str, date: str | None) -> list[DumpRequest]:
    return [wikidata_request(source, date)]


@stage_task("download")
def download_stage(home: str, cell: str, wiki: str, requests: list[DumpRequest], force: frozenset[str],
                   run_id: str, progress: bool = True) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    config = DownloadConfig(files=tuple(_identity(r) for r in requests))
    lang = None if cell == "wikidata" else cell
    return as_task_result(run_stage(
        wh, DOWNLOAD, cell, config, {}, lambda fp: fetch_files(wh, wiki, lang, requests, progress=progress),
        force=forced(DOWNLOAD.name, force), run_id=run_id))


@stage_task("documents")
def documents_stage(home: str, cell: str, wiki: str, requests: list[DumpRequest], download: StageRef,
                    max_docs: int | None, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    files = {r.role: local_path(wh.home, wiki, r) for r in requests if r.role in {"cirrus", "xml", "xml_index"}}
    return as_task_result(run_stage(
        wh, DOCUMENTS, cell, DocumentsConfig(max_docs=max_docs), {"download": download},
        lambda fp: ingest_documents(wh, cell, files, fp, max_docs=max_docs),
        force=forced(DOCUMENTS.name, force), run_id=run_id))


@stage_task("sitelinks")
def sitelinks_stage(home: str, cell: str, wiki: str, requested: SitelinkChoice, requests: list[DumpRequest],
                    documents: StageRef, download: StageRef, wikidata: StageRef | None,
                    wikidata_requests: list[DumpRequest] | None, force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    method = sitelink_method(requested, requests)
    inputs: dict[str, StageRef] = {"documents": documents}
    source_file = None
    if method == "page_props":
        inputs["page_props"] = download
        source_file = next((local_path(wh.home, wiki, r) for r in requests if r.role == "page_props"), None)
    elif method == "wikidata" and wikidata is not None and wikidata_requests:
        inputs["wikidata"] = wikidata
        source_file = local_path(wh.home, "wikidatawiki", wikidata_requests[0])
    return as_task_result(run_stage(
        wh, SITELINKS, cell, SitelinksConfig(method=method), inputs,
        lambda fp: ingest_sitelinks(wh, cell, wiki, method, fp, source_file=source_file),
        force=forced(SITELINKS.name, force), run_id=run_id))


def sitelink_method(requested: SitelinkChoice, requests: list[DumpRequest]) -> SitelinkMethod:
    """``auto``: a CirrusSearch dump carries QIDs itself; an XML dump takes them from page_props when there is one."""
    if requested != "auto":
        return requested
    roles = {r.role for r in requests}
    return "cirrus" if "cirrus" in roles else "page_props" if "page_props" in roles else "none"
