"""Files that appear only when complete: a killed run leaves the old file or none, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_text(path: Path) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` (temp file + rename) when the block ends without error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the file from other readers
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_text(path) as handle:
        handle.write(text)
