"""Open dump files whatever their compression, and turn decompression faults into input errors.

Wikimedia publishes the same content as .bz2, .gz and (on mirrors and in our
samples) .xz; every parser reads through this module so that a truncated or
corrupt archive is reported the same way everywhere: with the file name and the
decompressed byte offset at which reading stopped.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from tasks.errors import InputFormatError, TruncatedInputError

Compression = Literal["bz2", "xz", "gz", "plain"]

# Magic bytes decide; the suffix is only a claim that must agree with them, so
# a mislabelled or half-written file fails loudly instead of parsing garbage.
_MAGIC: dict[Compression, bytes] = {"bz2": b"BZh", "xz": b"\xfd7zXZ\x00", "gz": b"\x1f\x8b"}
_SUFFIXES: dict[str, Compression] = {".bz2": "bz2", ".xz": "xz", ".gz": "gz"}
_OPENERS = {"bz2": bz2.open, "xz": lzma.open, "gz": gzip.open}

BLOCK_SIZE = 1 << 20


def detect_compression(path: Path) -> Compression:
    """The compression of ``path`` from its magic bytes, checked against its suffix."""
    with open(path, "rb") as raw:
        head = raw.read(6)
    found: Compression = next((name for name, magic in _MAGIC.items() if head.startswith(magic)), "plain")
    claimed = _SUFFIXES.get(path.suffix.lower())
    if claimed is not None and claimed != found:
        reason = "file is empty" if not head else f"suffix says {claimed} but the content starts like {found}"
        raise InputFormatError(str(path), "byte 0", reason)
    return found


def open_decompressed(path: Path) -> io.BufferedIOBase:
    """A binary stream of the decompressed content (multi-stream bz2/gz included)."""
    compression = detect_compression(path)
    if compression == "plain":
        return open(path, "rb")
    return _OPENERS[compression](path, "rb")  # type: ignore[no-any-return]


def iter_decompressed_blocks(path: Path, block_size: int = BLOCK_SIZE) -> Iterator[bytes]:
    """Decompressed content in blocks; a cut or corrupt archive raises after the good blocks.

    A truncated archive raises ``TruncatedInputError`` and a corrupt one
    ``InputFormatError``, both naming the file and the decompressed byte offset
    reached, so callers keep what they parsed from the blocks already yielded.
    """
    offset = 0
    with open_decompressed(path) as stream:
        while True:
            try:
                # read1 hands over what one decompression step produced, so the
                # data before a cut is yielded rather than lost with the EOFError.
                block = stream.read1(block_size)
            except EOFError as exc:
                raise TruncatedInputError(str(path), f"decompressed byte {offset}", f"compressed stream ends early ({exc})") from exc
            except (OSError, lzma.LZMAError, zlib.error) as exc:
                raise InputFormatError(str(path), f"decompressed byte {offset}", f"corrupt compressed data ({exc})") from exc
            if not block:
                return
            offset += len(block)
            yield block
