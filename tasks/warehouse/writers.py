"""Who is writing a folder: a marker naming the process, so a later run can tell an abandoned write from a live one.

A stage writes its outputs (lake shards, an index) into a fresh folder and
publishes them with one atomic step (a catalog transaction, a rename). A
process killed before that step leaves the folder behind; nothing reads it,
but it is garbage on disk that no later run would ever reuse or delete. The
folder's writer leaves :data:`MARKER` in it while it writes — host, pid and
the process's start time (so a reused pid is not mistaken for the writer) —
and removes it once the folder is published. A later run deletes an
unpublished folder whose writer is gone; a folder written by a live process,
or by one on another host (whose processes cannot be seen from here), is
left alone.

Folders may be on any fsspec filesystem (the lake on an object store): every
operation goes through :class:`upath.UPath`, which takes a plain path too.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Literal, TypeVar

from upath import UPath

from tasks.processes import process_alive, process_started

MARKER = ".writer"
#: an unpublished folder without a marker is left alone this long: it may have just been made, or just published
GRACE_SECONDS = 60.0

WriterState = Literal["none", "alive", "dead", "elsewhere"]
Folder = TypeVar("Folder", bound="Path | UPath")


def _identity() -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": process_started()}


def claim(directory: Folder) -> Folder:
    """Create ``directory`` (and its parents) with this process's writer marker in it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text(json.dumps(_identity()))
    return directory


def release(directory: Path | UPath) -> None:
    """The folder is published (or given up): it has no writer any more."""
    (directory / MARKER).unlink(missing_ok=True)


def writer_state(directory: Path | UPath) -> WriterState:
    """Whether the folder's writer still runs: ``none`` (no marker), ``alive``, ``dead``, or ``elsewhere``
    (another host: it cannot be told from here)."""
    try:
        record = json.loads((directory / MARKER).read_text())
    except FileNotFoundError:
        return "none"
    except (OSError, ValueError):
        return "dead"  # a marker cut off mid-write: its writer died while starting
    if record.get("host") != socket.gethostname():
        return "elsewhere"
    pid = int(record.get("pid") or 0)
    started = record.get("started")
    if pid <= 0 or not process_alive(pid, started if isinstance(started, float) else None):
        return "dead"  # gone, or the pid now belongs to another process
    return "alive"


def abandoned(directory: Path | UPath) -> bool:
    """An unpublished folder nobody will finish: its writer died, or it has no marker and is older than the grace
    (a folder whose age cannot be told is left alone)."""
    state = writer_state(directory)
    if state == "dead":
        return True
    if state != "none":
        return False
    age = _age(UPath(directory))
    return age is not None and age > GRACE_SECONDS


def _age(directory: UPath) -> float | None:
    """Seconds since the folder last changed, by its filesystem's modified time; None where it has none.

    An object store keeps no times for folders (a folder is only a name prefix), and a filesystem may not
    implement ``modified`` at all: an unknown age never makes a folder abandoned.
    """
    try:
        return time.time() - directory.fs.modified(directory.path).timestamp()
    except (NotImplementedError, OSError, KeyError):
        return None
