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
import itertools
import queue
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


DECOMPRESS_THREADS = 2  # pieces decompressed at once beside the parse (bz2 releases the GIL)
DECOMPRESS_AHEAD = 8  # pieces decompressed ahead of the parse, at most: a few MB each


class _Piece:
    """The decompressed content of ``[start, end)``, handed over as it comes while a pool thread decompresses it.

    ``queue`` receives ``(stream_at, data)`` for each block of output, then ``None`` once the piece is done
    (unbounded: the consumer takes at most ``DECOMPRESS_AHEAD`` pieces ahead, a stream of the index each);
    ``whole`` then says whether the piece was whole bz2 streams filling the range exactly. A piece that is not
    (a cut file, a corrupt stream, an index offset off a stream boundary) stops there, and the caller reads on
    from its last stream with :func:`_read_streams`, which says what is wrong where.
    """

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end
        self.queue: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self.whole = False

    def decompress(self, path: Path, stop: threading.Event) -> None:
        try:
            with open(path, "rb") as raw:
                raw.seek(self.start)
                data = raw.read(self.end - self.start)
            view, at = memoryview(data), 0
            while at < len(data) and not stop.is_set():
                decompressor = bz2.BZ2Decompressor()
                stream = view[at:]
                while not decompressor.eof and not stop.is_set():
                    output = decompressor.decompress(stream, BLOCK_SIZE)
                    stream = b""
                    if output:
                        self.queue.put((self.start + at, output))
                    if not output and not decompressor.eof:
                        return  # no more input: the range ends inside this stream
                at = len(data) - len(decompressor.unused_data)
            self.whole = at == self.end - self.start == len(data)
        except OSError:
            pass  # a corrupt stream: the sequential reader reports it
        finally:
            self.queue.put(None)


def _iter_streams(path: Path, start: int, end: int, stream_starts: list[tuple[int, int]],
                  offsets: Sequence[int] = ()) -> Iterator[bytes]:
    """Decompressed bytes of the bz2 streams in ``[start, end)``, in order.

    Appends ``(decompressed offset, file offset)`` to ``stream_starts`` as each
    stream begins, so a position in the decompressed text can be traced back to
    the stream it came from.

    ``offsets`` are where the index says streams start inside the range: the
    pieces between them are decompressed ``DECOMPRESS_THREADS`` at a time ahead
    of the consumer, each handed over block by block (bz2 is a third of an XML
    parse when it runs in line). From the first piece that is not whole
    streams on, the range is read one stream after the other by
    :func:`_read_streams`, from the start of the stream it stopped in.
    """
    bounds = [start, *sorted({offset for offset in offsets if start < offset < end}), end]
    waiting = deque(_Piece(left, right) for left, right in zip(bounds, bounds[1:]))
    produced = 0
    resume, skip = start, 0  # where the sequential reader would go on: a stream's start, and what it gave already
    if len(waiting) > 1:
        stop = threading.Event()
        with ThreadPoolExecutor(DECOMPRESS_THREADS, thread_name_prefix="bz2") as pool:
            ahead: deque[_Piece] = deque()
            try:
                while waiting or ahead:
                    while waiting and len(ahead) < DECOMPRESS_AHEAD:
                        ahead.append(waiting.popleft())
                        pool.submit(ahead[-1].decompress, path, stop)
                    piece = ahead.popleft()
                    resume, skip = piece.start, 0
                    while (item := piece.queue.get()) is not None:
                        stream_at, data = item
                        if not (stream_at == resume and skip):  # a stream's first block
                            stream_starts.append((produced, stream_at))
                            resume, skip = stream_at, 0
                        produced += len(data)
                        skip += len(data)
                        yield data
                    if not piece.whole:
                        break
                else:
                    return
            finally:
                stop.set()
    yield from read_ahead(_read_streams(path, resume, end, stream_starts, produced - skip, skip))


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
    offsets: Sequence[int] = (),
) -> Iterator[dict[str, Any]]:
    """Document rows of the main-namespace pages in the streams of ``[start, end)``.

    Positions in issues and errors name the bz2 stream (its file offset) and
    the line inside it, which is where an operator would look. A range that
    runs to the end of the file must end the dump; if it does not, the file was
    cut and ``TruncatedInputError`` follows the pages read. ``offsets``, the
    index's stream starts in the range, let streams be decompressed in parallel.
    """
    rule_for(lang)
    stream_starts: list[tuple[int, int]] = []

    def locate(line: int, column: int, byte: int) -> str:
        index = max(bisect.bisect_right(stream_starts, (byte, float("inf"))) - 1, 0)
        produced, stream_at = stream_starts[index] if stream_starts else (0, start)
        return f"bz2 stream at byte {stream_at}, decompressed byte {byte - produced} of it (line {line}, column {column} of the range from byte {start})"

    return iter_pages_from_blocks(
        _iter_streams(path, start, end, stream_starts, offsets),
        source=str(path),
        lang=lang,
        siteinfo=siteinfo,
        locate=locate,
        on_issue=on_issue,
        fragment=True,
        tail=end >= path.stat().st_size,
    )
