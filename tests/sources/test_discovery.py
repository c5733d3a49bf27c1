"""Dump discovery over mirror trees built in tmp_path: on disk, as file:// URLs and served over loopback HTTP."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tasks.dumps.discovery import DumpFile, find_dump
from tasks.dumps.download import ResourceNotFoundError, download
from tasks.errors import ConfigError, InputFormatError, PermanentDownloadError
from tasks.retry import RetryPolicy
from tests.support.loopback_http import LoopbackServer, Reply

FAST = RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.01, jitter=0.0)


def add_job(root: Path, wiki: str, date: str, job: str, status: str, files: dict[str, bytes]) -> None:
    """Write the files of one job and record it in the date's dumpstatus.json, in Wikimedia's format."""
    directory = root / wiki / date
    directory.mkdir(parents=True, exist_ok=True)
    status_path = directory / "dumpstatus.json"
    document = json.loads(status_path.read_text()) if status_path.exists() else {"jobs": {}, "version": "0.8"}
    entries = {}
    for name, data in files.items():
        (directory / name).write_bytes(data)
        entries[name] = {
            "size": len(data),
            "url": f"/{wiki}/{date}/{name}",
            "md5": hashlib.md5(data).hexdigest(),
            "sha1": hashlib.sha1(data).hexdigest(),
        }
    document["jobs"][job] = {"status": status, "updated": f"{date[:4]}-{date[4:6]}-{date[6:]} 08:00:00", "files": entries}
    status_path.write_text(json.dumps(document))


def expected_file(base: str, parts: list[str], data: bytes, size: bool = True) -> DumpFile:
    return DumpFile(
        parts[-1],
        "/".join([base.rstrip("/"), *parts]) if "://" in base else str(Path(base, *parts)),
        len(data) if size else None,
        hashlib.sha1(data).hexdigest(),
        hashlib.md5(data).hexdigest(),
    )


@pytest.fixture(params=["path", "file-url", "http"])
def mirror(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Callable[[], str]]]:
    """A mirror root to fill in, and how to address it: a plain path, a file:// URL or a loopback HTTP server."""
    root = tmp_path / "mirror"
    root.mkdir()
    if request.param == "http":
        with LoopbackServer(root=root) as server:
            yield root, lambda: server.base_url + "/"
    else:
        yield root, (lambda: root.as_uri()) if request.param == "file-url" else (lambda: str(root))


def test_latest_complete_date_beats_newer_unfinished_ones(mirror: tuple[Path, Callable[[], str]], tmp_path: Path) -> None:
    root, base = mirror
    old, done = b"old page props", b"page props of january"
    add_job(root, "enwiki", "20251201", "pagepropstable", "done", {"enwiki-20251201-page_props.sql.gz": old})
    add_job(root, "enwiki", "20260101", "pagepropstable", "done", {"enwiki-20260101-page_props.sql.gz": done})
    add_job(root, "enwiki", "20260115", "pagepropstable", "failed", {})
    add_job(root, "enwiki", "20260201", "pagepropstable", "in-progress", {})
    add_job(root, "enwiki", "20260201", "langlinkstable", "done", {"enwiki-20260201-langlinks.sql.gz": b"x"})
    (root / "enwiki" / "20260301").mkdir()  # a run that has not written its dumpstatus.json yet
    (root / "enwiki" / "latest").mkdir()

    listing = find_dump(base(), "enwiki", "page_props", policy=FAST)

    assert (listing.wiki, listing.kind, listing.date) == ("enwiki", "page_props", "20260101")
    assert listing.files == (expected_file(base(), ["enwiki", "20260101", "enwiki-20260101-page_props.sql.gz"], done),)
    fetched = download(listing.files[0].url, tmp_path / "out", sha1=listing.files[0].sha1, progress=False)
    assert fetched.path.read_bytes() == done


def test_langlinks_and_xml_come_from_their_own_jobs(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    dump, index = b"<mediawiki/>", b"offsets"
    xml_files = {"dewiki-20260201-pages-articles-multistream.xml.bz2": dump, "dewiki-20260201-pages-articles-multistream-index.txt.bz2": index}
    add_job(root, "dewiki", "20260201", "articlesmultistreamdump", "done", xml_files)
    add_job(root, "dewiki", "20260201", "langlinkstable", "in-progress", {})
    add_job(root, "dewiki", "20260101", "langlinkstable", "done", {"dewiki-20260101-langlinks.sql.gz": b"links"})

    xml = find_dump(base(), "dewiki", "xml", policy=FAST)
    langlinks = find_dump(base(), "dewiki", "langlinks", policy=FAST)

    assert xml.date == "20260201"
    assert xml.files == (
        expected_file(base(), ["dewiki", "20260201", "dewiki-20260201-pages-articles-multistream-index.txt.bz2"], index),
        expected_file(base(), ["dewiki", "20260201", "dewiki-20260201-pages-articles-multistream.xml.bz2"], dump),
    )
    assert langlinks.date == "20260101"
    assert [f.name for f in langlinks.files] == ["dewiki-20260101-langlinks.sql.gz"]


def test_explicit_date(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    add_job(root, "frwiki", "20260101", "pagepropstable", "done", {"frwiki-20260101-page_props.sql.gz": b"a"})
    add_job(root, "frwiki", "20260201", "pagepropstable", "done", {"frwiki-20260201-page_props.sql.gz": b"b"})
    add_job(root, "frwiki", "20260301", "pagepropstable", "in-progress", {})

    assert find_dump(base(), "frwiki", "page_props", date="20260101", policy=FAST).date == "20260101"
    with pytest.raises(PermanentDownloadError, match="20260301.*'in-progress'"):
        find_dump(base(), "frwiki", "page_props", date="20260301", policy=FAST)
    with pytest.raises(PermanentDownloadError, match="20251101.*does not exist"):
        find_dump(base(), "frwiki", "page_props", date="20251101", policy=FAST)


def test_cirrus_takes_checksums_from_the_sums_file(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    older, newer = root / "other" / "cirrussearch" / "20260105", root / "other" / "cirrussearch" / "20260112"
    older.mkdir(parents=True)
    newer.mkdir()
    content, other_wiki = b"bulk lines of jawiki", b"bulk lines of kowiki"
    (older / "jawiki-20260105-cirrussearch-content.json.gz").write_bytes(content)
    (older / "kowiki-20260105-cirrussearch-content.json.gz").write_bytes(other_wiki)
    sha1_of = {name: hashlib.sha1(data).hexdigest() for name, data in [("jawiki-20260105-cirrussearch-content.json.gz", content), ("kowiki-20260105-cirrussearch-content.json.gz", other_wiki)]}
    (older / "cirrussearch-20260105-sha1sums.txt").write_text("".join(f"{digest}  {name}\n" for name, digest in sha1_of.items()))
    (newer / "kowiki-20260112-cirrussearch-content.json.gz").write_bytes(b"only kowiki so far")

    listing = find_dump(base(), "jawiki", "cirrus", policy=FAST)

    assert (listing.wiki, listing.kind, listing.date) == ("jawiki", "cirrus", "20260105")
    (found,) = listing.files
    assert found.sha1 == hashlib.sha1(content).hexdigest()
    assert (found.md5, found.size) == (None, None)
    assert found.url == expected_file(base(), ["other", "cirrussearch", "20260105", found.name], content).url


def test_wikidata_entities(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    entities = root / "wikidatawiki" / "entities"
    (entities / "20260103").mkdir(parents=True)
    (entities / "20260110").mkdir()
    (entities / "latest-all.json.bz2").write_bytes(b"not a dated dump")
    data = b"[\n{entity}\n]"
    name = "wikidata-20260103-all.json.bz2"
    (entities / "20260103" / name).write_bytes(data)
    (entities / "20260103" / "wikidata-20260103-md5sums.txt").write_text(f"{hashlib.md5(data).hexdigest()} *{name}\n")
    (entities / "20260103" / "wikidata-20260103-sha1sums.txt").write_text(f"{hashlib.sha1(data).hexdigest()}  {name}\n")
    (entities / "20260110" / "wikidata-20260110-all.json.gz").write_bytes(b"the bz2 is not out yet")

    listing = find_dump(base(), "enwiki", "wikidata", policy=FAST)

    assert (listing.wiki, listing.date) == ("wikidatawiki", "20260103")
    assert listing.files == (expected_file(base(), ["wikidatawiki", "entities", "20260103", name], data, size=False),)


def test_no_complete_date_is_a_clear_error(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    add_job(root, "itwiki", "20260101", "pagepropstable", "failed", {})
    add_job(root, "itwiki", "20260201", "pagepropstable", "in-progress", {})

    with pytest.raises(PermanentDownloadError) as caught:
        find_dump(base(), "itwiki", "page_props", policy=FAST)

    message = str(caught.value)
    assert "itwiki" in message and "no complete" in message
    assert "(20260101 to 20260201; newest 20260201: job 'pagepropstable' is 'in-progress')" in message


def test_no_dates_and_missing_wiki(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    (root / "eswiki" / "latest").mkdir(parents=True)

    with pytest.raises(PermanentDownloadError, match="eswiki.*lists no dump dates"):
        find_dump(base(), "eswiki", "xml", policy=FAST)
    with pytest.raises(ResourceNotFoundError, match="ptwiki.*check the wiki name"):
        find_dump(base(), "ptwiki", "xml", policy=FAST)


def test_malformed_dumpstatus_names_the_file(mirror: tuple[Path, Callable[[], str]]) -> None:
    root, base = mirror
    (root / "nlwiki" / "20260101").mkdir(parents=True)
    (root / "nlwiki" / "20260101" / "dumpstatus.json").write_text('{"jobs": {"pagepropstable": {"files": {}}}}')
    (root / "svwiki" / "20260101").mkdir(parents=True)
    (root / "svwiki" / "20260101" / "dumpstatus.json").write_text('{"jobs": ')

    with pytest.raises(InputFormatError, match=r"nlwiki/20260101/dumpstatus.json at jobs.pagepropstable.status"):
        find_dump(base(), "nlwiki", "page_props", policy=FAST)
    with pytest.raises(InputFormatError, match=r"svwiki/20260101/dumpstatus.json: malformed dumpstatus.json: Invalid JSON"):
        find_dump(base(), "svwiki", "page_props", policy=FAST)


def test_malformed_sums_file_names_the_line(tmp_path: Path) -> None:
    directory = tmp_path / "other" / "cirrussearch" / "20260105"
    directory.mkdir(parents=True)
    (directory / "enwiki-20260105-cirrussearch-content.json.gz").write_bytes(b"x")
    (directory / "md5sums").write_text(f"{'a' * 32}  fine.gz\nnot a checksum line\n")

    with pytest.raises(InputFormatError, match="md5sums at line 2"):
        find_dump(str(tmp_path), "enwiki", "cirrus")


@pytest.mark.parametrize(("kind", "date"), [("sql", None), ("xml", "2026-01-01")])
def test_bad_arguments_are_config_errors(tmp_path: Path, kind: str, date: str | None) -> None:
    with pytest.raises(ConfigError):
        find_dump(str(tmp_path), "enwiki", kind, date=date)  # type: ignore[arg-type]


def test_mirror_reads_are_retried_like_downloads(tmp_path: Path) -> None:
    add_job(tmp_path, "enwiki", "20260101", "pagepropstable", "done", {"enwiki-20260101-page_props.sql.gz": b"p"})
    with LoopbackServer(root=tmp_path) as server:
        server.queue("/enwiki/", Reply(503))
        server.queue("/enwiki/20260101/dumpstatus.json", Reply(429, {"Retry-After": "0"}))

        listing = find_dump(server.base_url, "enwiki", "page_props", policy=FAST)

        assert listing.date == "20260101"
        assert len(server.requests_for("/enwiki/")) == 2
        assert len(server.requests_for("/enwiki/20260101/dumpstatus.json")) == 2
