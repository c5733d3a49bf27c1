"""Open dump files whatever their compression, and turn decompression faults into input errors.

Wikimedia publishes the same content as .bz2, .gz and (on mirrors and in our
samples) .xz; every parser reads through this module so that a truncated or
corrupt archive is reported the same way everywhere: with the file name and the
decompressed byte offset at which reading stopped.

Decompression is the floor of every parse, so it is made cheap twice over: gzip
goes through ISA-L (``isal``, about 2.5× zlib's speed, same format checks: CRC
and length of every member), and :func:`read_ahead` runs any decompressor in a
thread of its own, which overlaps with parsing because the decompressors
release the GIL.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import queue
import threading
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple, TypeVar

from isal import isal_zlib

from tasks.errors import InputFormatError, TruncatedInputError

Compression = Literal["bz2", "xz", "gz", "plain"]

# Magic bytes decide; the suffix is only a claim that must agree with them, so
# a mislabelled or half-written file fails loudly instead of parsing garbage.
_MAGIC: dict[Compression, bytes] = {"bz2": b"BZh", "xz": b"\xfd7zXZ\x00", "gz": b"\x1f\x8b"}
_SUFFIXES: dict[str, Compression] = {".bz2": "bz2", ".xz": "xz", ".gz": "gz"}
_OPENERS = {"bz2": bz2.open, "xz": lzma.open, "gz": gzip.open}

BLOCK_SIZE = 1 << 20
READ_AHEAD_BLOCKS = 8  # decompressed blocks a reader thread may hold ahead of its consumer
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip header and trailer, checked like the gzip module does


def detect_compression(path: Path) -> Compression:
    """The compression of ``path`` from its magic bytes, checked against its suffix."""
    with open(path, "rb") as raw:
        head = raw.read(6)
    if not head:  # a download killed before its first byte, or a placeholder: no format can read it
        raise InputFormatError(str(path), "byte 0", "the file is empty")
    found: Compression = next((name for name, magic in _MAGIC.items() if head.startswith(magic)), "plain")
    claimed = _SUFFIXES.get(path.suffix.lower())
    if claimed is not None and claimed != found:
        raise InputFormatError(str(path), "byte 0",
                               f"not a {claimed} file: the suffix says {claimed} but the content starts like {found}")
    return found


def _open_stream(raw: BinaryIO, compression: Compression) -> BinaryIO:
    """A stream of the decompressed content read from ``raw`` (multi-stream bz2/gz included); ``raw`` itself when
    plain. Closing it leaves ``raw`` open: whoever opened ``raw`` closes it."""
    if compression == "plain":
        return raw
    return _OPENERS[compression](raw, "rb")  # type: ignore[no-any-return]


class Block(NamedTuple):
    """Decompressed bytes and how far into the compressed file reading had got when they were produced.

    ``position`` grows with every block and is the same for the same file in
    every process, which is what lets several workers share one gzip stream
    (:mod:`tasks.dumps.lines`): each decompresses it all and keeps the blocks
    of its own range of compressed bytes.
    """

    data: bytes
    position: int


def _gzip_blocks(raw: BinaryIO, block_size: int) -> Iterator[Block]:
    """Decompressed blocks of every gzip member in ``raw``, through ISA-L.

    Each block is handed over as soon as it is decompressed, so a cut member
    raises ``EOFError`` only after everything before the cut was yielded;
    zero padding after the last member is skipped, as the gzip module does.
    """
    decompressor = None
    pending = b""
    while True:
        if not pending:
            pending = raw.read(block_size)
            if not pending:
                break
        if decompressor is None:
            if not pending.strip(b"\0"):
                pending = b""
                continue
            decompressor = isal_zlib.decompressobj(wbits=_GZIP_WBITS)
        block = decompressor.decompress(pending, block_size)
        if decompressor.eof:
            pending, decompressor = decompressor.unused_data, None
        else:
            pending = decompressor.unconsumed_tail
        if block:
            yield Block(block, raw.tell() - len(pending))
    if decompressor is not None:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")


def _raw_blocks(path: Path, block_size: int) -> Iterator[Block]:
    skip = 0
    compression = detect_compression(path)
    if compression == "gz":
        try:
            with open(path, "rb") as raw:
                for block in _gzip_blocks(raw, block_size):
                    skip += len(block.data)
                    yield block
            return
        except isal_zlib.error:
            # ISA-L checks a member's CRC in the call that decompresses its end,
            # so the data before the fault was not all handed over; the standard
            # reader, replayed past what was yielded, hands it over and reports
            # the fault in its own words, as for every other format.
            pass
    with open(path, "rb") as raw, _open_stream(raw, compression) as stream:
        # read1 hands over what one decompression step produced, so the
        # data before a cut is yielded rather than lost with the EOFError.
        while data := stream.read1(block_size):
            if skip >= len(data):
                skip -= len(data)
                continue
            yield Block(data[skip:], raw.tell())
            skip = 0


T = TypeVar("T")


def read_ahead(items: Iterable[T], depth: int = READ_AHEAD_BLOCKS) -> Iterator[T]:
    """``items`` (never None), produced in a thread of their own up to ``depth`` ahead of the consumer.

    Decompression then runs beside parsing instead of before it. Whatever the
    producer raises is raised here, after the items it yielded before; a
    consumer that stops early stops the thread.
    """
    handoff: queue.Queue[tuple[T | None, BaseException | None]] = queue.Queue(depth)
    stop = threading.Event()

    def put(entry: tuple[T | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer, which raises it in its own thread
            put((None, exc))
            return
        put((None, None))

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is None:
                return
            yield item
    finally:
        stop.set()
        thread.join()


def iter_positioned_blocks(path: Path, block_size: int = BLOCK_SIZE) -> Iterator[Block]:
    """Decompressed content in blocks with their compressed positions; a cut or corrupt archive raises after the
    good blocks.

    A truncated archive raises ``TruncatedInputError`` and a corrupt one
    ``InputFormatError``, both naming the file and the decompressed byte offset
    reached, so callers can keep what they parsed from the blocks already
    yielded before a cut (a corrupt archive's earlier blocks are not to be
    trusted: gzip checks its CRC only at the end of a member). An archive that
    decompresses to nothing is an ``InputFormatError`` too: no dump is empty.
    """
    offset = 0
    blocks = read_ahead(_raw_blocks(path, block_size))
    while True:
        try:
            block = next(blocks, None)
        except EOFError as exc:
            raise TruncatedInputError(str(path), f"decompressed byte {offset}", f"compressed stream ends early ({exc})") from exc
        except (OSError, lzma.LZMAError, zlib.error, isal_zlib.error) as exc:
            raise InputFormatError(str(path), f"decompressed byte {offset}", f"corrupt compressed data ({exc})") from exc
        if block is None:
            if offset == 0:
                raise InputFormatError(str(path), "decompressed byte 0", "the archive decompresses to nothing")
            return
        offset += len(block.data)
        yield block


def iter_decompressed_blocks(path: Path, block_size: int = BLOCK_SIZE) -> Iterator[bytes]:
    """The decompressed content of :func:`iter_positioned_blocks`, in blocks."""
    return (block.data for block in iter_positioned_blocks(path, block_size))
