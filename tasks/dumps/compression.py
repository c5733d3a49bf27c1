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
    if not head:  # a download killed before its first byte, or a placeholder: no format can read it
        raise InputFormatError(str(path), "byte 0", "the file is empty")
    found: Compression = next((name for name, magic in _MAGIC.items() if head.startswith(magic)), "plain")
    claimed = _SUFFIXES.get(path.suffix.lower())
    if claimed is not None and claimed != found:
        raise InputFormatError(str(path), "byte 0",
                               f"not a {claimed} file: the suffix says {claimed} but the content starts like {found}")
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
    reached, so callers can keep what they parsed from the blocks already
    yielded before a cut (a corrupt archive's earlier blocks are not to be
    trusted: gzip checks its CRC only at the end of a member). An archive that
    decompresses to nothing is an ``InputFormatError`` too: no dump is empty.
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
                if offset == 0:
                    raise InputFormatError(str(path), "decompressed byte 0", "the archive decompresses to nothing")
                return
            offset += len(block)
            yield block
