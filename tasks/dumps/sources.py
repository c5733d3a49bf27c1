"""Turn ``--source`` into the local dump files of one language.

``wikimedia`` or a URL (http(s)://, file://) is a dump mirror: the latest
complete dump (or ``--date``) is discovered and downloaded with checksum
verification. A directory is searched for files named with the Wikimedia
prefix ``<wiki>-``; a single file is taken as the one input of one language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from tasks.dumps.checksums import digest_file
from tasks.dumps.discovery import DEFAULT_BASE_URL, DumpListing, find_dump
from tasks.errors import ConfigError

DocKind = Literal["cirrus", "xml"]
FileRole = Literal["cirrus", "xml", "xml_index", "page_props", "wikidata"]

_DATE = re.compile(r"-(\d{8})-")
_ROLE_PATTERNS: tuple[tuple[FileRole, re.Pattern[str]], ...] = (
    ("cirrus", re.compile(r"cirrussearch-content\.json(\.gz|\.bz2)?$")),
    ("xml_index", re.compile(r"multistream-index\.txt(\.bz2)?$")),
    ("page_props", re.compile(r"page_props\.sql(\.gz)?$")),
    ("xml", re.compile(r"\.xml(\.bz2|\.xz|\.gz)?$")),
)
_WIKIDATA = re.compile(r"^(wikidata-\d{8}|latest)-all\.json(\.bz2|\.gz)?$")


@dataclass(frozen=True)
class DumpRequest:
    """One file to bring to local disk: a remote URL with published checksums, or a local path."""

    role: FileRole
    name: str
    location: str
    date: str | None
    sha1: str | None = None
    md5: str | None = None


def is_remote(source: str) -> bool:
    return source == "wikimedia" or urlparse(source).scheme in {"http", "https", "file"}


def base_url(source: str) -> str:
    return DEFAULT_BASE_URL if source == "wikimedia" else source.rstrip("/")


def role_of(name: str) -> FileRole | None:
    """What a dump file is, from its Wikimedia file name."""
    if _WIKIDATA.match(name):
        return "wikidata"
    for role, pattern in _ROLE_PATTERNS:
        if pattern.search(name):
            return role
    return None


def _requests_from_listing(listing: DumpListing, roles: Iterable[FileRole]) -> list[DumpRequest]:
    wanted = set(roles)
    found = []
    for file in listing.files:
        role = role_of(file.name)
        if role in wanted:
            found.append(DumpRequest(role, file.name, file.url, listing.date, file.sha1, file.md5))
    return found


def remote_requests(source: str, wiki: str, kind: DocKind, date: str | None, page_props: bool) -> list[DumpRequest]:
    """Discover the files of one wiki on a mirror: the documents dump, and page_props for XML.

    page_props is looked up for the XML dump's own date, so QIDs match the pages.
    """
    base = base_url(source)
    listing = find_dump(base, wiki, kind, date)
    requests = _requests_from_listing(listing, ["cirrus"] if kind == "cirrus" else ["xml", "xml_index"])
    if page_props and kind == "xml":
        requests += _requests_from_listing(find_dump(base, wiki, "page_props", listing.date), ["page_props"])
    return requests


def wikidata_request(source: str, date: str | None) -> DumpRequest:
    """The Wikidata entity dump of a mirror (shared by every language)."""
    if not is_remote(source):
        path = Path(source)
        candidates = sorted(p for p in (path.rglob("*") if path.is_dir() else [path]) if _WIKIDATA.match(p.name))
        if date:
            candidates = [p for p in candidates if date in p.name]
        if not candidates:
            raise ConfigError(f"--sitelinks wikidata: no wikidata-<date>-all.json.bz2 (or latest-all.json.*) under {source}")
        newest = candidates[-1]
        return DumpRequest("wikidata", newest.name, str(newest), _date_of(newest.name))
    listing = find_dump(base_url(source), "wikidatawiki", "wikidata", date)
    found = _requests_from_listing(listing, ["wikidata"])
    if not found:
        raise ConfigError(f"the Wikidata listing of {listing.date} at {source} has no all.json dump")
    return found[0]


def _date_of(name: str) -> str | None:
    match = _DATE.search(name)
    return match.group(1) if match else None


def local_requests(source: Path, wiki: str, kind: DocKind | None, date: str | None, page_props: bool) -> list[DumpRequest]:
    """Find one wiki's files in a local directory (by the ``<wiki>-`` prefix) or take one file.

    When several dump dates are present, the newest (or ``--date``) wins, so a
    local mirror with history behaves like the remote one.
    """
    if source.is_file():
        role = role_of(source.name)
        if role not in {"cirrus", "xml"} or (kind and role != kind):
            raise ConfigError(f"{source}: not a {kind or 'CirrusSearch or XML'} dump file (by its name)")
        return [DumpRequest(role, source.name, str(source), _date_of(source.name))]
    if not source.is_dir():
        raise ConfigError(f"--source {source}: no such file or directory")
    files = sorted(p for p in source.rglob(f"{wiki}-*") if p.is_file() and role_of(p.name))
    if date:
        files = [p for p in files if _date_of(p.name) == date]
    roles_wanted: list[FileRole] = ["cirrus"] if kind == "cirrus" else ["xml", "xml_index"] if kind == "xml" else ["cirrus", "xml", "xml_index"]
    if page_props:
        roles_wanted.append("page_props")
    picked: dict[FileRole, Path] = {}
    for path in files:  # sorted: a later (newer) date replaces an earlier one
        role = role_of(path.name)
        if role in roles_wanted:
            picked[role] = path
    if "cirrus" in picked and "xml" in picked and kind is None:
        picked.pop("xml")
        picked.pop("xml_index", None)
    if not ({"cirrus", "xml"} & picked.keys()):
        raise ConfigError(f"--source {source}: no {kind or 'CirrusSearch or XML'} dump named {wiki}-… found")
    return [DumpRequest(role, p.name, str(p), _date_of(p.name)) for role, p in sorted(picked.items())]


def local_identity(path: Path) -> dict[str, object]:
    """What identifies a local file's content for fingerprints: name, size and SHA-1."""
    digests, size = digest_file(path)
    return {"name": path.name, "size": size, "sha1": digests.sha1}
