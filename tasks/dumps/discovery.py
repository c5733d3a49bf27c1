"""Dump discovery: which dated dump to use, and where its files and checksums are.

Mirrors keep only recent dates, and a date directory appears long before its
dump is finished, so a pipeline must not hard-code a date: it walks the listed
dates newest first and takes the first complete one, unless the caller pins a
date.  The same code reads http(s) mirrors (HTML index pages), file:// URLs and
local mirror directories laid out like dumps.wikimedia.org.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal, get_args
from urllib.parse import quote, unquote, urlsplit

import httpx
from pydantic import BaseModel, Field, ValidationError

from tasks.dumps.checksums import Algorithm, parse_sums_file, sums_file_algorithm
from tasks.dumps.download import ResourceNotFoundError, fetch_bytes, http_client, local_path
from tasks.errors import ConfigError, InputFormatError, PermanentDownloadError
from tasks.retry import RetryPolicy

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://dumps.wikimedia.org"

DumpKind = Literal["cirrus", "xml", "page_props", "langlinks", "wikidata"]

# dumpstatus.json jobs that produce each per-wiki kind, preferred first: on the
# largest wikis the multistream job writes split parts and a "recombine" job
# joins them into the single file (and index) the parsers read.
_JOBS: dict[str, tuple[str, ...]] = {
    "xml": ("articlesmultistreamdumprecombine", "articlesmultistreamdump"),
    "page_props": ("pagepropstable",),
    "langlinks": ("langlinkstable",),
}
_DATE = re.compile(r"^\d{8}$")


@dataclass(frozen=True)
class DumpFile:
    """One file of a dump; ``url`` is absolute, in the base URL's scheme (or a local path)."""

    name: str
    url: str
    size: int | None
    sha1: str | None
    md5: str | None


@dataclass(frozen=True)
class DumpListing:
    """The files of one complete dump of one wiki and kind."""

    wiki: str
    kind: DumpKind
    date: str
    files: tuple[DumpFile, ...]


class _NotReady(Exception):
    """A date has no complete dump of the requested kind; the message says why."""


class _StatusFile(BaseModel):
    size: int | None = Field(None, ge=0)
    md5: str | None = None
    sha1: str | None = None


class _StatusJob(BaseModel):
    status: str
    files: dict[str, _StatusFile] = {}


class _DumpStatus(BaseModel):
    """The part of Wikimedia's dumpstatus.json that decides completeness; other keys are ignored."""

    jobs: dict[str, _StatusJob]


class _IndexLinks(HTMLParser):
    """Collects the entry names an HTML directory index links to."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            name = unquote(urlsplit(href).path).rstrip("/").rsplit("/", 1)[-1]
            if name not in ("", ".", ".."):
                self.names.append(name)


@dataclass(frozen=True)
class _Mirror:
    """Addresses and reads a mirror, whether it is served over http(s) or sits on disk."""

    base: str
    client: httpx.Client
    policy: RetryPolicy

    def url(self, *parts: str) -> str:
        if urlsplit(self.base).scheme:
            return "/".join([self.base.rstrip("/"), *(quote(part, safe="") for part in parts)])
        return str(Path(self.base).absolute().joinpath(*parts))

    def read(self, url: str) -> bytes:
        return fetch_bytes(url, client=self.client, policy=self.policy)

    def names(self, url: str) -> list[str]:
        """Entry names of a directory: its HTML index over http(s), its listing on disk."""
        path = local_path(url)
        if path is None:
            index = _IndexLinks()
            index.feed(self.read(url + "/").decode("utf-8", errors="replace"))
            return index.names
        if not path.is_dir():
            raise ResourceNotFoundError(f"{url}: no such directory")
        return [entry.name for entry in path.iterdir()]


def find_dump(
    base_url: str,
    wiki: str,
    kind: DumpKind,
    date: str | None = None,
    client: httpx.Client | None = None,
    *,
    policy: RetryPolicy | None = None,
) -> DumpListing:
    """Find the latest complete dump of ``wiki`` for ``kind`` (or check the pinned ``date``).

    For ``wikidata`` the wiki is ignored: there is one entity dump for all wikis.
    Raises PermanentDownloadError when no date qualifies, InputFormatError when
    a dumpstatus.json or checksum file is malformed.
    """
    if kind not in get_args(DumpKind):
        raise ConfigError(f"dump kind {kind!r}: expected one of {', '.join(get_args(DumpKind))}")
    if date is not None and not _DATE.match(date):
        raise ConfigError(f"dump date {date!r}: expected YYYYMMDD, as in the mirror's directory names")
    with http_client(client) as http:
        mirror = _Mirror(base_url, http, policy or RetryPolicy())
        dates_url, probe = _layout(mirror, wiki, kind)
        what = "wikidata entity dump" if kind == "wikidata" else f"{kind} dump of {wiki}"
        listing = _pinned(probe, date, what) if date is not None else _latest(mirror, dates_url, probe, what)
    log.info("using the %s from %s (%d file(s))", what, listing.date, len(listing.files))
    return listing


def _layout(mirror: _Mirror, wiki: str, kind: DumpKind) -> tuple[str, Callable[[str], DumpListing]]:
    """Where a kind's dates are listed, and how to check one date for a complete dump."""
    if kind == "cirrus":
        return mirror.url("other", "cirrussearch"), lambda date: _listed_file(
            mirror, wiki, kind, date, ("other", "cirrussearch", date), f"{wiki}-{date}-cirrussearch-content.json.gz"
        )
    if kind == "wikidata":
        return mirror.url("wikidatawiki", "entities"), lambda date: _listed_file(
            mirror, "wikidatawiki", kind, date, ("wikidatawiki", "entities", date), f"wikidata-{date}-all.json.bz2"
        )
    return mirror.url(wiki), lambda date: _job_files(mirror, wiki, kind, date)


def _pinned(probe: Callable[[str], DumpListing], date: str, what: str) -> DumpListing:
    try:
        return probe(date)
    except _NotReady as reason:
        raise PermanentDownloadError(
            f"no complete {what} for {date}: {reason}; pick another --date, or leave it out to use the latest complete one"
        ) from None


def _latest(mirror: _Mirror, dates_url: str, probe: Callable[[str], DumpListing], what: str) -> DumpListing:
    try:
        names = mirror.names(dates_url)
    except ResourceNotFoundError as exc:
        raise ResourceNotFoundError(f"{dates_url}: no such directory on the mirror; check the wiki name and base URL") from exc
    dates = sorted((name for name in names if _DATE.match(name)), reverse=True)
    if not dates:
        raise PermanentDownloadError(f"{dates_url}: lists no dump dates (YYYYMMDD directories); check the wiki name and base URL")
    reasons = []
    for date in dates:
        try:
            return probe(date)
        except _NotReady as reason:
            log.info("%s: skipping %s: %s", what, date, reason)
            reasons.append(f"{date}: {reason}")
    # The newest date's reason says whether the dump is still running or was never there (a wiki the mirror lacks).
    raise PermanentDownloadError(
        f"{dates_url}: no complete {what} among {len(dates)} date(s) ({dates[-1]} to {dates[0]}; newest {reasons[0]}); "
        "check the wiki name, wait for a running dump to finish, or use another mirror"
    )


def _job_files(mirror: _Mirror, wiki: str, kind: DumpKind, date: str) -> DumpListing:
    """A per-wiki dump is complete when its job in dumpstatus.json is "done"."""
    status_url = mirror.url(wiki, date, "dumpstatus.json")
    try:
        raw = mirror.read(status_url)
    except ResourceNotFoundError:
        raise _NotReady(f"{status_url} does not exist") from None
    try:
        status = _DumpStatus.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        position = ".".join(str(step) for step in first["loc"]) or None
        raise InputFormatError(status_url, position, f"malformed dumpstatus.json: {first['msg']}") from exc
    present = [name for name in _JOBS[kind] if name in status.jobs]
    if not present:
        raise _NotReady(f"{status_url} has no {' or '.join(map(repr, _JOBS[kind]))} job")
    job_name = next((name for name in present if status.jobs[name].status == "done" and status.jobs[name].files), present[-1])
    job = status.jobs[job_name]
    if job.status != "done":
        raise _NotReady(f"job {job_name!r} is {job.status!r}")
    if not job.files:
        raise InputFormatError(status_url, f"jobs.{job_name}.files", "a finished job lists no files")
    files = tuple(
        DumpFile(name, mirror.url(wiki, date, name), entry.size, entry.sha1, entry.md5)
        for name, entry in sorted(job.files.items())
    )
    return DumpListing(wiki, kind, date, files)


def _listed_file(
    mirror: _Mirror, wiki: str, kind: DumpKind, date: str, directory: tuple[str, ...], name: str
) -> DumpListing:
    """Dumps without a dumpstatus.json are complete once their file is listed."""
    directory_url = mirror.url(*directory)
    try:
        names = mirror.names(directory_url)
    except ResourceNotFoundError:
        raise _NotReady(f"{directory_url} does not exist") from None
    if name not in names:
        raise _NotReady(f"{directory_url} has no {name}")
    sums = _published_sums(mirror, directory, names)
    dump_file = DumpFile(name, mirror.url(*directory, name), None, sums["sha1"].get(name), sums["md5"].get(name))
    return DumpListing(wiki, kind, date, (dump_file,))


def _published_sums(mirror: _Mirror, directory: tuple[str, ...], names: list[str]) -> dict[Algorithm, dict[str, str]]:
    """Checksums from every sha1sums/md5sums file in a date directory (none is fine)."""
    sums: dict[Algorithm, dict[str, str]] = {"sha1": {}, "md5": {}}
    for name in sorted(names):
        algorithm = sums_file_algorithm(name)
        if algorithm is not None:
            url = mirror.url(*directory, name)
            sums[algorithm].update(parse_sums_file(mirror.read(url).decode("utf-8", errors="replace"), algorithm, url))
    return sums
