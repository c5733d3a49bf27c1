"""Files that appear only when complete: a killed run leaves the old file or none, never half of one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def _atomic(path: Path, mode: str) -> Iterator[IO[Any]]:
    """A handle whose content replaces ``path`` (temp file, fsync, rename) when the block ends without error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    text = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
    try:
        with os.fdopen(descriptor, mode, **text) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the file from other readers (a web server, another user)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_text(path: Path) -> AbstractContextManager[IO[str]]:
    """A text handle (UTF-8, ``\\n`` line ends) that replaces ``path`` atomically when its block ends."""
    return _atomic(path, "w")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with _atomic(path, "w") as handle:
        handle.write(text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with _atomic(path, "wb") as handle:
        handle.write(data)


@contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """A fresh staging folder beside ``target`` that replaces it whole when the block ends without error: a reader
    sees the old folder or the new one, never a mix of two writes (a killed run leaves the old one)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    previous = target.parent / f".{target.name}.previous"
    try:
        yield staging
        os.chmod(staging, 0o755)  # mkdtemp's 0700 would hide the folder from other readers
        shutil.rmtree(previous, ignore_errors=True)
        if target.exists():
            os.replace(target, previous)
        os.replace(staging, target)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
