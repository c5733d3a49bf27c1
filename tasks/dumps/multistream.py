"""Parallel reading of ``pages-articles-multistream`` dumps.

Such a dump is a concatenation of independent bz2 streams: the first holds the
``<siteinfo>``, each later one up to 100 ``<page>`` elements, the last the
closing ``</mediawiki>``. The index file lists the byte offset of every page's
stream, so the file can be cut into byte ranges on stream boundaries and each
range parsed on its own worker with the same page logic as a whole file.
"""

from __future__ import annotations

import bisect
import bz2
import contextlib
import itertools
import os
import weakref
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import indexed_bzip2

from tasks.dumps.compression import BLOCK_SIZE, iter_decompressed_blocks, read_ahead
from tasks.dumps.xml_pages import IssueSink, SiteInfo, iter_pages_from_blocks, parse_siteinfo
from tasks.errors import InputFormatError, TruncatedInputError
from tasks.text.languages import rule_for


def read_index_offsets(index_path: Path) -> list[int]:
    """Distinct stream offsets, sorted, from an ``offset:page_id:title`` index (titles may hold colons)."""
    offsets: set[int] = set()
    pending = b""
    line_number = 0
    for block in itertools.chain(iter_decompressed_blocks(index_path), [b"\n"]):
        *lines, pending = (pending + block).split(b"\n")
        for line in lines:
            line_number += 1
            if not line.strip():
                continue
            offset, _, rest = line.partition(b":")
            if not offset.strip().isdigit() or b":" not in rest:
                raise InputFormatError(str(index_path), f"line {line_number}", f"expected 'offset:page_id:title', got {line[:80]!r}")
            offsets.add(int(offset))
    if not offsets:
        raise InputFormatError(str(index_path), None, "index lists no streams")
    return sorted(offsets)


def plan_chunks(offsets: Sequence[int], file_size: int, target_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of whole streams, each about ``target_bytes`` long.

    Ranges start at the first page stream and the last one runs to the end of
    the file, so together they cover every page stream (and the closing
    stream) exactly once; a single stream bigger than the target is a range of
    its own.
    """
    if target_bytes <= 0:
        raise ValueError(f"target_bytes must be positive, got {target_bytes}")
    boundaries = sorted(set(offsets))
    if not boundaries:
        return []
    if boundaries[-1] >= file_size:
        raise ValueError(f"stream offset {boundaries[-1]} lies beyond the file size {file_size}")
    chunks: list[tuple[int, int]] = []
    start = boundaries[0]
    for offset in boundaries[1:]:
        if offset - start >= target_bytes:
            chunks.append((start, offset))
            start = offset
    chunks.append((start, file_size))
    return chunks


# indexed_bzip2's threads decompressing bz2 blocks ahead of the parse, without the GIL. Three beat two by 3% on two
# cores (benchmarks/parse_throughput.py): more blocks in flight, the parse waits less.
DECOMPRESS_THREADS = 3
_END_OF_STREAM_BITS = 48 + 32  # a stream's end-of-stream magic and combined CRC, then padding to a whole byte
_HEADER_BITS = 32  # "BZh" and the block size digit, before a stream's first block


@contextlib.contextmanager
def _staged(path: Path, start: int, end: int) -> Iterator[int]:
    """A file descriptor of an in-memory file holding the bytes ``[start, end)`` of ``path`` (fewer where the
    file is shorter): indexed_bzip2 reads a whole file, and a Python file object would make its threads wait for
    the GIL at every read. The kernel copies the bytes (``sendfile``)."""
    staged = os.memfd_create("multistream-range", os.MFD_CLOEXEC)
    try:
        with open(path, "rb") as raw:
            offset = start
            while offset < end and (sent := os.sendfile(staged, raw.fileno(), offset, end - offset)):
                offset += sent
        os.lseek(staged, 0, os.SEEK_SET)
        yield staged
    finally:
        os.close(staged)


def _stream_starts(block_offsets: dict[int, int]) -> list[tuple[int, int]]:
    """(decompressed offset, byte offset in the range) of each stream, from indexed_bzip2's block offsets.

    Those map the bit offset of every block, and of every stream's end, to the decompressed bytes before it. A
    stream starts with the range or right after the one before ends: a 4-byte header after its end-of-stream
    marker and CRC, padded to a whole byte (no block is that short, so the pattern names streams only).
    """
    starts, previous = [], None
    for bit in sorted(block_offsets):
        if bit == _HEADER_BITS or (previous is not None
                                   and bit == ((previous + _END_OF_STREAM_BITS + 7) // 8) * 8 + _HEADER_BITS):
            starts.append((block_offsets[bit], (bit - _HEADER_BITS) // 8))
        previous = bit
    return starts


def _ends_whole(block_offsets: dict[int, int], size: int, produced: int) -> bool:
    """Whether the streams fill the ``size`` bytes read, and all their output came. indexed_bzip2 ends its block
    offsets with the bit where its reading stopped; it stops without an error at bytes after a stream that are
    no bz2 stream (it skips them as trailing garbage), which the sequential reader must report."""
    return bool(block_offsets) and max(block_offsets) == 8 * size and block_offsets[8 * size] == produced


_FAILURES = (RuntimeError, ValueError, OSError)  # how indexed_bzip2 reports a cut or corrupt stream


def _read_block(reader: indexed_bzip2.IndexedBzip2File) -> bytes | None:
    """The next decompressed bytes (empty at the end), or None where indexed_bzip2 could not go on."""
    try:
        return reader.read(BLOCK_SIZE)
    except _FAILURES:
        return None


def _decompressed_in_parallel(path: Path, start: int, end: int,
                              stream_starts: list[tuple[int, int]]) -> Generator[bytes, None, int | None]:
    """:func:`_iter_streams` by indexed_bzip2, its blocks decompressed ``DECOMPRESS_THREADS`` at a time (bz2 is
    half the CPU of an XML parse, and a single stream of a few MB would keep one thread busy while the parse
    waits). Returns None when the range was whole bz2 streams, else how many bytes were handed over before it
    stopped (a cut file, a corrupt stream, bytes that are no bz2 stream)."""
    with _staged(path, start, end) as staged:
        size = os.fstat(staged).st_size
        try:
            reader = indexed_bzip2.IndexedBzip2File(staged, parallelization=DECOMPRESS_THREADS)
        except _FAILURES:
            return 0
        produced = noted = 0
        # Closed when the reading ends, and at the latest when the interpreter exits: a reader still open when it is
        # torn down (this generator left suspended, as by an interrupt) aborts the process from its C++ destructor.
        close = weakref.finalize(reader, reader.close)
        try:
            while data := _read_block(reader):
                for offset, at in _stream_starts(reader.available_block_offsets())[noted:]:
                    if offset >= produced + len(data):
                        break
                    stream_starts.append((offset, start + at))
                    noted += 1
                produced += len(data)
                yield data
            if data is None or size < end - start or not _ends_whole(reader.block_offsets(), size, produced):
                return produced
        finally:
            close()
    return None


def _iter_streams(path: Path, start: int, end: int, stream_starts: list[tuple[int, int]]) -> Iterator[bytes]:
    """Decompressed bytes of the bz2 streams in ``[start, end)``, in order.

    Appends ``(decompressed offset, file offset)`` to ``stream_starts`` as each
    stream begins, so a position in the decompressed text can be traced back to
    the stream it came from.

    The blocks are decompressed in parallel (:func:`_decompressed_in_parallel`).
    Where that stops before the end of the range, the range is read on one
    stream after the other by :func:`_read_streams`, from the start of the
    stream it stopped in, which says what is wrong where.
    """
    stopped_at = yield from _decompressed_in_parallel(path, start, end, stream_starts)
    if stopped_at is None:
        return
    produced, stream_at = stream_starts[-1] if stream_starts else (0, start)
    yield from read_ahead(_read_streams(path, stream_at, end, stream_starts, produced, stopped_at - produced))


def _read_streams(path: Path, start: int, end: int, stream_starts: list[tuple[int, int]], produced: int = 0,
                  skip: int = 0) -> Iterator[bytes]:
    """:func:`_iter_streams` one stream after the other, as they come: ``produced`` bytes came before ``start``, and
    the first ``skip`` bytes of the stream there were handed over already (its start is noted once)."""
    with open(path, "rb") as raw:
        raw.seek(start)
        pending, pending_at = b"", start
        decompressor: bz2.BZ2Decompressor | None = None
        stream_at = start
        while pending or raw.tell() < end:
            if not pending:
                pending_at = raw.tell()
                pending = raw.read(min(BLOCK_SIZE, end - pending_at))
                if not pending:
                    raise TruncatedInputError(str(path), f"byte {pending_at}", f"file ends before byte {end}")
            if decompressor is None:
                decompressor, stream_at = bz2.BZ2Decompressor(), pending_at
                if not stream_starts or stream_starts[-1] != (produced, stream_at):
                    stream_starts.append((produced, stream_at))
            try:
                data = decompressor.decompress(pending)
            except OSError as exc:
                raise InputFormatError(str(path), f"bz2 stream at byte {stream_at}", f"corrupt bz2 stream ({exc})") from exc
            produced += len(data)
            if skip:
                data, skip = data[skip:], max(skip - len(data), 0)
            if data:
                yield data
            if decompressor.eof:
                leftover = decompressor.unused_data
                pending_at += len(pending) - len(leftover)
                pending, decompressor = leftover, None
            else:
                pending_at += len(pending)
                pending = b""
    if decompressor is not None:
        raise TruncatedInputError(str(path), f"bz2 stream at byte {stream_at}", f"byte range ends at {end}, inside this stream")


def read_siteinfo(path: Path, first_offset: int) -> SiteInfo:
    """The ``<siteinfo>`` of a multistream dump, from the stream(s) before the first page stream."""

    def locate(line: int, column: int, byte: int) -> str:
        return f"line {line}, column {column} of the first stream (decompressed byte {byte})"

    return parse_siteinfo(_read_streams(path, 0, first_offset, []), source=str(path), locate=locate)


def iter_chunk_pages(
    path: Path, start: int, end: int, lang: str, siteinfo: SiteInfo, *, on_issue: IssueSink | None = None,
) -> Iterator[dict[str, Any]]:
    """Document rows of the main-namespace pages in the streams of ``[start, end)``.

    Positions in issues and errors name the bz2 stream (its file offset) and
    the line inside it, which is where an operator would look. A range that
    runs to the end of the file must end the dump; if it does not, the file was
    cut and ``TruncatedInputError`` follows the pages read.
    """
    rule_for(lang)
    stream_starts: list[tuple[int, int]] = []

    def locate(line: int, column: int, byte: int) -> str:
        index = max(bisect.bisect_right(stream_starts, (byte, float("inf"))) - 1, 0)
        produced, stream_at = stream_starts[index] if stream_starts else (0, start)
        return f"bz2 stream at byte {stream_at}, decompressed byte {byte - produced} of it (line {line}, column {column} of the range from byte {start})"

    return iter_pages_from_blocks(
        _iter_streams(path, start, end, stream_starts),
        source=str(path),
        lang=lang,
        siteinfo=siteinfo,
        locate=locate,
        on_issue=on_issue,
        fragment=True,
        tail=end >= path.stat().st_size,
    )
