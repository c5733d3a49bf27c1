"""Reading JSON Lines files people bring (sheets, judgements, published datasets) with errors that name the line.

One reader for all of them so that every file gets the same treatment: gzip
by suffix, blank lines skipped, integers parsed exactly (orjson keeps 64-bit
ids as ints, never floats), and a line that is not a JSON object reported as
``<file> line <n>: …`` — the one thing a user needs to fix it.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

from tasks.errors import ConfigError


def read_json_lines(path: Path, what: str = "record") -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; ``what`` names a line's content in errors."""
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
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
                records.append((number, record))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except EOFError:
        raise ConfigError(f"{path}: the gzip stream ends early (truncated download?)") from None
    return records
