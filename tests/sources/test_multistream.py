"""Multistream dumps built here, stream by stream with bz2.compress, the way Wikimedia writes them."""

from __future__ import annotations

import bz2
import random
import subprocess
import sys
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tasks.dumps import multistream
from tasks.dumps.multistream import iter_chunk_pages, plan_chunks, read_index_offsets, read_siteinfo
from tasks.dumps.xml_pages import iter_xml_pages
from tasks.errors import ConfigError, InputFormatError, TruncatedInputError
from tests.sources.test_xml_pages import SCHEMA_010, page_xml, siteinfo_xml

EL_NAMESPACES = {-1: "Ειδικό", 0: "", 1: "Συζήτηση", 6: "Αρχείο", 10: "Πρότυπο", 14: "Κατηγορία"}
PER_STREAM = 4


@dataclass(frozen=True)
class Multistream:
    path: Path
    index: Path
    offsets: list[int]  # where each page stream starts, as written
    size: int
    streams: list[list[tuple[str, int, int]]]  # (title, page id, ns) of the pages in each page stream


def page_specs() -> list[tuple[str, int, int, str]]:
    """(title, id, ns, wikitext): articles, redirects, talk pages and titles with colons."""
    specs = []
    for n in range(1, 24):
        if n % 5 == 0:
            specs.append((f"Συζήτηση:Θέμα {n}", n, 1, f"Σχόλιο {n}."))
        elif n % 7 == 0:
            specs.append((f"Ανακατεύθυνση {n}", n, 0, f"#ΑΝΑΚΑΤΕΥΘΥΝΣΗ [[Θέμα {n - 1}]]"))
        else:
            specs.append((f"Θέμα {n}: λόγος 1:{n}", n, 0, f"'''Θέμα {n}''' με [[σύνδεσμος|σύνδεσμο]].{{{{Πρότυπο {n}}}}}\n[[Κατηγορία:Δοκιμές]]"))
    return specs


def build_multistream(directory: Path, specs: list[tuple[str, int, int, str]], *, missing_id: int | None = None) -> Multistream:
    head = f'<mediawiki xmlns="{SCHEMA_010}" version="0.10" xml:lang="el">\n' + siteinfo_xml(EL_NAMESPACES, dbname="elwiki")
    streams = [bz2.compress(head.encode())]
    groups = [specs[i : i + PER_STREAM] for i in range(0, len(specs), PER_STREAM)]
    for group in groups:
        xml = "".join(
            page_xml(title, None if page_id == missing_id else page_id, text, ns=ns,
                     redirect=text.partition("[[")[2].rstrip("]") if text.startswith("#") else None)
            for title, page_id, ns, text in group
        )
        streams.append(bz2.compress(xml.encode()))
    streams.append(bz2.compress(b"</mediawiki>\n"))
    offsets = [sum(len(stream) for stream in streams[:i]) for i in range(1, len(streams) - 1)]
    path = directory / "elwiki-test-pages-articles-multistream.xml.bz2"
    path.write_bytes(b"".join(streams))
    lines = [f"{offset}:{page_id}:{title}" for offset, group in zip(offsets, groups) for title, page_id, _, _ in group]
    index = directory / "elwiki-test-pages-articles-multistream-index.txt.bz2"
    index.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    return Multistream(path, index, offsets, path.stat().st_size, [[(t, i, ns) for t, i, ns, _ in group] for group in groups])


@pytest.fixture
def dump(tmp_path: Path) -> Multistream:
    return build_multistream(tmp_path, page_specs())


def _stops_at_once(*_args: object) -> Generator[bytes, None, int]:
    """A parallel reader that gave up before its first byte: everything is read one stream after the other."""
    return 0
    yield b""  # (a generator)


@pytest.fixture(params=["streams in parallel", "one stream after the other"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How the streams are read: by indexed_bzip2's threads, or by the sequential reader it falls back to (from
    wherever it stops). Every behaviour below holds either way."""
    if request.param == "one stream after the other":
        monkeypatch.setattr(multistream, "_decompressed_in_parallel", _stops_at_once)
    return str(request.param)


def chunk_rows(dump: Multistream, chunks: list[tuple[int, int]], **kwargs: Any) -> list[dict[str, Any]]:
    siteinfo = read_siteinfo(dump.path, dump.offsets[0])
    return [row for start, end in chunks for row in iter_chunk_pages(dump.path, start, end, "el", siteinfo, **kwargs)]


def test_index_offsets_are_the_distinct_stream_starts(dump: Multistream) -> None:
    assert read_index_offsets(dump.index) == dump.offsets


def test_malformed_index_line_is_reported_with_its_line(tmp_path: Path) -> None:
    index = tmp_path / "index.txt"
    index.write_text("568:1:Α\n568:2:Β: με άνω τελεία\nnot an index line\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="line 3"):
        read_index_offsets(index)


def test_plan_chunks_hand_example() -> None:
    # From 10: 20 and 30 are under 25 bytes on, 45 is 35 on -> cut at 45; from 45 the file end follows.
    assert plan_chunks([10, 20, 30, 45, 60], 100, 25) == [(10, 45), (45, 100)]
    assert plan_chunks([30, 10, 30, 20], 50, 1) == [(10, 20), (20, 30), (30, 50)]


@pytest.mark.parametrize("target", [1, 1000, 1500, 10**9])
def test_chunks_cover_every_stream_exactly_once(dump: Multistream, target: int) -> None:
    chunks = plan_chunks(dump.offsets, dump.size, target)
    assert chunks[0][0] == dump.offsets[0] and chunks[-1][1] == dump.size
    assert all(left[1] == right[0] for left, right in zip(chunks, chunks[1:]))
    stream_ranges = list(zip(dump.offsets, [*dump.offsets[1:], dump.size]))
    for start, end in stream_ranges:
        assert sum(1 for lo, hi in chunks if lo <= start and end <= hi) == 1
    if target == 1:
        assert chunks == stream_ranges
    if target == 10**9:
        assert chunks == [(dump.offsets[0], dump.size)]


@pytest.mark.parametrize("target", [1, 1500, 10**9])
def test_chunks_give_the_same_pages_as_the_whole_file(dump: Multistream, target: int, mode: str) -> None:
    whole = list(iter_xml_pages(dump.path, "el"))
    expected_titles = [title for stream in dump.streams for title, _, ns in stream if ns == 0]
    assert [row["title"] for row in whole] == expected_titles
    assert chunk_rows(dump, plan_chunks(dump.offsets, dump.size, target)) == whole


def test_whole_streams_are_read_in_parallel_only(dump: Multistream, monkeypatch: pytest.MonkeyPatch) -> None:
    """Good streams never reach the sequential reader (which would cost the parallel decompression)."""
    def refuse(*_args: object) -> None:
        raise AssertionError("fell back to the sequential reader")

    whole = list(iter_xml_pages(dump.path, "el"))
    siteinfo = read_siteinfo(dump.path, dump.offsets[0])
    monkeypatch.setattr(multistream, "_read_streams", refuse)
    assert [row for start, end in plan_chunks(dump.offsets, dump.size, 1500)
            for row in iter_chunk_pages(dump.path, start, end, "el", siteinfo)] == whole


def _long_article(n: int, words: int) -> tuple[str, int, int, str]:
    """An article of ``words`` random words: its stream holds several bz2 blocks (900 kB of text each)."""
    rng = random.Random(n)
    text = " ".join("".join(rng.choice("αβγδεζηθικλμνξοπρστυφχψω") for _ in range(rng.randint(2, 9))) for _ in range(words))
    return (f"Μακρύ {n}", 100 + n, 0, f"Μακρύ {n}: {text}\n[[Κατηγορία:Δοκιμές]]")


@pytest.mark.parametrize("missing_stream", [1, 3])
def test_streams_of_many_blocks_name_each_issue_by_its_stream(tmp_path: Path, mode: str, missing_stream: int) -> None:
    """Streams of several bz2 blocks, decompressed a block at a time: the same pages as the whole file, and a page
    without an id in a stream after (or among) them is named by that stream's offset."""
    specs = [_long_article(n, 250_000) if n % 4 == 1 else spec for n, spec in enumerate(page_specs()[:16])]
    missing = specs[PER_STREAM * missing_stream + 2]
    dump = build_multistream(tmp_path, specs, missing_id=missing[1])
    issues: list[dict[str, Any]] = []
    rows = chunk_rows(dump, [(dump.offsets[0], dump.size)], on_issue=issues.append)
    assert rows == list(iter_xml_pages(dump.path, "el", on_issue=lambda _issue: None))
    assert [len(row["text"]) > 1_000_000 for row in rows if row["page_id"] > 100] == [True] * 4
    assert [issue["item"] for issue in issues] == [missing[0]]
    assert issues[0]["position"].startswith(f"bz2 stream at byte {dump.offsets[missing_stream]}, ")


@pytest.mark.parametrize("garbage", [b"\0" * 12, b"not a bz2 stream", bz2.compress(b"<page/>")[:-6]])
def test_bytes_after_the_last_stream_are_reported(dump: Multistream, mode: str, garbage: bytes) -> None:
    """Zeros, text or a cut stream after the closing stream (indexed_bzip2 itself skips trailing garbage)."""
    dump.path.write_bytes(dump.path.read_bytes() + garbage)
    with pytest.raises(InputFormatError) as caught:
        chunk_rows(dump, [(dump.offsets[0], dump.size + len(garbage))])
    assert caught.value.position.startswith(f"bz2 stream at byte {dump.size}")


def test_siteinfo_comes_from_the_first_stream(dump: Multistream) -> None:
    info = read_siteinfo(dump.path, dump.offsets[0])
    assert (info.dbname, info.case) == ("elwiki", "first-letter")
    assert info.namespaces == EL_NAMESPACES


def test_a_middle_chunk_yields_only_its_streams(dump: Multistream, mode: str) -> None:
    rows = chunk_rows(dump, [(dump.offsets[2], dump.offsets[4])])
    assert [row["page_id"] for row in rows] == [i for stream in dump.streams[2:4] for _, i, ns in stream if ns == 0]
    assert all(row["text"] and "[[" not in row["text"] for row in rows if not row["is_redirect"])


@pytest.mark.parametrize("at", [0, 60])
def test_corrupt_stream_is_named_by_its_byte_offset(dump: Multistream, mode: str, at: int) -> None:
    data = bytearray(dump.path.read_bytes())
    bad = dump.offsets[3]
    data[bad + at : bad + at + 3] = b"XYZ"  # no longer a bz2 stream header / a damaged block
    dump.path.write_bytes(bytes(data))
    with pytest.raises(InputFormatError) as caught:
        chunk_rows(dump, [(dump.offsets[0], dump.size)])
    assert caught.value.position == f"bz2 stream at byte {bad}"
    assert str(dump.path) in str(caught.value)


def test_pages_before_a_corrupt_stream_are_kept(dump: Multistream, mode: str) -> None:
    data = bytearray(dump.path.read_bytes())
    data[dump.offsets[3] : dump.offsets[3] + 3] = b"XYZ"
    dump.path.write_bytes(bytes(data))
    siteinfo = read_siteinfo(dump.path, dump.offsets[0])
    rows = []
    with pytest.raises(InputFormatError):
        for row in iter_chunk_pages(dump.path, dump.offsets[0], dump.size, "el", siteinfo):
            rows.append(row)
    assert [row["page_id"] for row in rows] == [i for stream in dump.streams[:3] for _, i, ns in stream if ns == 0]


def test_range_ending_inside_a_stream_is_truncated(dump: Multistream, mode: str) -> None:
    siteinfo = read_siteinfo(dump.path, dump.offsets[0])
    end = dump.offsets[2] + 40
    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_chunk_pages(dump.path, dump.offsets[0], end, "el", siteinfo):
            rows.append(row)
    assert [row["page_id"] for row in rows] == [i for stream in dump.streams[:2] for _, i, ns in stream if ns == 0]
    assert f"bz2 stream at byte {dump.offsets[2]}" in str(caught.value)


def test_a_file_cut_between_streams_is_truncated_at_its_end(dump: Multistream, tmp_path: Path, mode: str) -> None:
    # No decompressor notices a cut on a stream boundary; the missing </mediawiki> stream does.
    cut = tmp_path / dump.path.name
    cut.write_bytes(dump.path.read_bytes()[: dump.offsets[3]])
    siteinfo = read_siteinfo(cut, dump.offsets[0])
    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_chunk_pages(cut, dump.offsets[0], dump.offsets[3], "el", siteinfo):
            rows.append(row)
    assert [row["page_id"] for row in rows] == [i for stream in dump.streams[:3] for _, i, ns in stream if ns == 0]
    assert caught.value.reason == "input ends between pages, without the dump's closing </mediawiki>"
    assert caught.value.position.startswith(f"bz2 stream at byte {dump.offsets[2]}, ")


def test_issue_position_names_the_stream(tmp_path: Path, mode: str) -> None:
    dump = build_multistream(tmp_path, page_specs(), missing_id=10 + 1)  # page 11 sits in the third page stream
    issues: list[dict[str, Any]] = []
    rows = chunk_rows(dump, plan_chunks(dump.offsets, dump.size, 10**9), on_issue=issues.append)
    assert 11 not in {row["page_id"] for row in rows}
    assert [issue["item"] for issue in issues] == ["Θέμα 11: λόγος 1:11"]
    assert issues[0]["position"].startswith(f"bz2 stream at byte {dump.offsets[2]}, ")


def test_unknown_language_fails_before_reading(dump: Multistream) -> None:
    siteinfo = read_siteinfo(dump.path, dump.offsets[0])
    with pytest.raises(ConfigError):
        iter_chunk_pages(dump.path, dump.offsets[0], dump.size, "xx", siteinfo)


_LEFT_SUSPENDED = """
import sys
from pathlib import Path
from tasks.dumps.multistream import iter_chunk_pages, read_siteinfo
path, start = Path(sys.argv[1]), int(sys.argv[2])
pages = iter_chunk_pages(path, start, path.stat().st_size, "el", read_siteinfo(path, start))
print(next(pages)["title"])
"""


def test_a_reading_left_suspended_at_exit_ends_the_process_cleanly(tmp_path: Path) -> None:
    """A process that exits while a chunk is still being read (a script that stops early, an interrupt) exits with
    its own status: indexed_bzip2's reader, if still open when the interpreter tears it down, aborts it (SIGABRT)."""
    specs = [_long_article(n, 250_000) if n % 2 else spec for n, spec in enumerate(page_specs()[:12])]
    dump = build_multistream(tmp_path, specs)
    root = Path(__file__).resolve().parents[2]
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _LEFT_SUSPENDED, str(dump.path), str(dump.offsets[0])],
                              capture_output=True, text=True, cwd=root, timeout=120)
        assert (done.returncode, done.stdout.strip()) == (0, specs[0][0]), done.stderr[-500:]
        assert "terminate called" not in done.stderr
