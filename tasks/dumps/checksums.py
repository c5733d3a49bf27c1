"""Checksums of dump files: one-pass hashing, verification and published sums.

Dumps are tens of gigabytes, so a file is read once and both digests are fed
from the same bytes; a resumed download continues the hashes of the part it
already has instead of rereading it.  Wikimedia publishes checksums either in
``dumpstatus.json`` or in ``sha1sums``/``md5sums`` files next to the dumps.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

from tasks.errors import ChecksumMismatchError, InputFormatError

Algorithm = Literal["sha1", "md5"]

_CHUNK = 1 << 20
_HEX_LENGTH: dict[Algorithm, int] = {"sha1": 40, "md5": 32}
_SUMS_LINE = re.compile(r"^([0-9a-fA-F]+)\s+\*?(\S.*)$")


class Digests:
    """SHA-1 and MD5 fed together, so a file is read only once for both."""

    def __init__(self) -> None:
        self._sha1 = hashlib.sha1()
        self._md5 = hashlib.md5()

    def update(self, data: bytes) -> None:
        self._sha1.update(data)
        self._md5.update(data)

    @property
    def sha1(self) -> str:
        return self._sha1.hexdigest()

    @property
    def md5(self) -> str:
        return self._md5.hexdigest()


def digest_file(path: Path) -> tuple[Digests, int]:
    """Hash a file on disk; the size comes along because callers resume from it."""
    digests = Digests()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digests.update(chunk)
            size += len(chunk)
    return digests, size


def mismatches(digests: Digests, *, sha1: str | None, md5: str | None) -> list[str]:
    """Describe every expected checksum the digests fail; empty when all agree.

    Comparison ignores case because published sums are not consistently lower-case.
    """
    found = []
    for algorithm, expected, actual in (("sha1", sha1, digests.sha1), ("md5", md5, digests.md5)):
        if expected is not None and expected.lower() != actual:
            found.append(f"{algorithm} expected {expected.lower()}, got {actual}")
    return found


def require_match(name: str, digests: Digests, *, sha1: str | None, md5: str | None) -> None:
    """Raise ChecksumMismatchError naming the file when a given checksum differs."""
    problems = mismatches(digests, sha1=sha1, md5=md5)
    if problems:
        raise ChecksumMismatchError(f"{name}: checksum mismatch ({'; '.join(problems)})")


def sums_file_algorithm(name: str) -> Algorithm | None:
    """Tell which digest a published checksum file holds, from its name alone.

    Wikimedia names them ``…-sha1sums.txt``, ``…-md5sums.txt`` or plain
    ``sha1sums``/``md5sums``; anything else is not a checksum file.
    """
    for algorithm in _HEX_LENGTH:
        if name.endswith((f"{algorithm}sums.txt", f"{algorithm}sums")):
            return algorithm
    return None


def parse_sums_file(text: str, algorithm: Algorithm, source: str) -> dict[str, str]:
    """Map file name → lower-case hex digest from ``<hex>  <name>`` lines.

    A line that is not in that shape, or whose digest has the wrong length for
    the algorithm, is an error with its line number: a silently skipped line
    would later look like a file without a published checksum.
    """
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _SUMS_LINE.match(line.strip())
        if match is None or len(match.group(1)) != _HEX_LENGTH[algorithm]:
            raise InputFormatError(source, f"line {number}", f"expected '<{algorithm} hex>  <file name>', got {line!r}")
        sums[match.group(2)] = match.group(1).lower()
    return sums
