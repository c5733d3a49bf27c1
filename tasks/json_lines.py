"""Reading JSON Lines files people bring (sheets, judgements, published datasets) with errors that name the line.

One reader for all of them so that every file gets the same treatment: gzip
by suffix, blank lines skipped, integers parsed exactly (orjson keeps 64-bit
ids as ints, never floats), and a line that is not a JSON object reported as
``<file> line <n>: …`` — the one thing a user needs to fix it.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import orjson

from tasks.errors import ConfigError

T = TypeVar("T")


def _read_bytes(path: Path) -> bytes:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except EOFError:
        raise ConfigError(f"{path}: the gzip stream ends early (truncated download?)") from None


def read_typed_lines(path: Path, kind: type[T], what: str = "record") -> list[tuple[int, T]]:
    """(line number, record) of every non-blank line, decoded and type-checked as ``kind`` (a msgspec Struct).

    The whole file is decoded in one call (msgspec, several times faster than
    decoding and checking line by line in Python); only when that fails is it
    read again line by line, to name the line and what is wrong with it.
    """
    data = _read_bytes(path)
    decoder = msgspec.json.Decoder(kind)
    try:
        records = decoder.decode_lines(data)
    except msgspec.DecodeError:
        for number, line in _numbered_lines(data):
            try:
                decoder.decode(line)
            except msgspec.ValidationError as exc:
                raise ConfigError(f"{path} line {number}: not a valid {what}: {exc}") from None
            except msgspec.DecodeError as exc:
                raise ConfigError(f"{path} line {number}: not JSON ({exc})") from None
        raise
    if len(records) == data.count(b"\n") + (not data.endswith(b"\n")) - (not data):
        return list(enumerate(records, 1))  # no blank line: record i is line i
    return [(number, record) for (number, _), record in zip(_numbered_lines(data), records, strict=True)]


def _numbered_lines(data: bytes) -> list[tuple[int, bytes]]:
    return [(number, line) for number, line in enumerate(data.split(b"\n"), 1) if line.strip()]


def read_json_lines(path: Path, what: str = "record") -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; ``what`` names a line's content in errors."""
    return list(iter_json_lines(path, what))


def iter_json_lines(path: Path, what: str = "record") -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`read_json_lines` one line at a time, for files too large to hold (a passage corpus)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ConfigError(f"{path} line {number}: not JSON ({exc.msg})") from None
                if not isinstance(record, dict):
                    raise ConfigError(f"{path} line {number}: a {what} is a JSON object")
                yield number, record
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except EOFError:
        raise ConfigError(f"{path}: the gzip stream ends early (truncated download?)") from None
