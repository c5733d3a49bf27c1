"""Running out of memory or disk, told as the stage, the language and what to change.

At a full dump's size a stage can exhaust the machine: an allocation fails (``MemoryError``, DuckDB's or Arrow's
out-of-memory error), the disk fills (``ENOSPC``, ``EDQUOT``, DuckDB's "No space left on device"), or the system's
OOM killer (or Dask's nanny, at a worker's memory limit) kills a worker process, which Dask reports as
``KilledWorker``. Each surfaced as a bare exception from deep inside a library, or as a killed process; an operator
rebuilding every language needs to know which stage and language, how far the machine was from coping, and which
setting to change. :func:`resource_failure` turns those exceptions into :class:`ResourceExhausted`; any other
exception is left alone.
"""

from __future__ import annotations

import errno
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import psutil

from tasks.errors import BabelbenchError
from tasks.warehouse.lake import LOCAL_PROTOCOLS

DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
GB = 1024**3


class ResourceExhausted(BabelbenchError):
    """A stage's cell ran out of memory or disk; the message says where, how much there was, and what to change."""

    def __init__(self, resource: str, message: str) -> None:
        self.resource = resource  # "memory" | "disk"
        super().__init__(message)


def resource_failure(exc: BaseException, what: str, langs: list[str], home: Path,
                     lake: Any) -> ResourceExhausted | None:
    """The :class:`ResourceExhausted` that ``exc`` (raised by ``what``, a ``stage[cell]`` in ``langs``, writing to
    ``home`` and the warehouse's ``lake`` root) stands for, or None when it is not about memory or disk."""
    where = f"{what} ({'language ' + ', '.join(langs) if langs else 'no single language'})"
    if _out_of_disk(exc):
        free = ", ".join(f"{path}: {shutil.disk_usage(path).free / GB:.1f} GB free"
                         for path in _disk_paths(home, lake) if path.exists())
        return ResourceExhausted("disk", (
            f"{where} ran out of disk space: {exc}. Now {free}. What to change: free space there, or point "
            "BABELBENCH_HOME (the warehouse and indexes), BABELBENCH_LAKE (Parquet shards) or TMPDIR (DuckDB's and "
            "the sort's spill files) at a larger disk; then run the same command again, and the cells finished "
            "before this one are kept."))
    if _out_of_memory(exc):
        total = psutil.virtual_memory().total / GB
        peak = _peak_rss() / GB
        killed = "a worker process was killed (the system's OOM killer, or Dask's nanny at the worker's memory " \
                 "limit)" if _killed_worker(exc) else f"an allocation failed: {type(exc).__name__}: {exc}"
        return ResourceExhausted("memory", (
            f"{where} ran out of memory: {killed}. This process peaked at {peak:.1f} GB of the machine's "
            f"{total:.1f} GB. What to change: run one process at a time here (BABELBENCH_COMPUTE=inline keeps the "
            "work in this process, without Dask's workers each holding a batch), stop other work on the machine, "
            "or give it more memory; then run the same command again, and the cells finished before this one are "
            "kept."))
    return None


def _out_of_disk(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        return True
    return isinstance(exc, duckdb.IOException) and "No space left on device" in str(exc)


def _out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError | duckdb.OutOfMemoryException) or _killed_worker(exc)


def _killed_worker(exc: BaseException) -> bool:
    """Dask's ``KilledWorker``, told by name: importing ``distributed`` here would load it in every process."""
    return type(exc).__name__ == "KilledWorker" and type(exc).__module__.startswith("distributed")


def _disk_paths(home: Path, lake: Any) -> list[Path]:
    """The local folders a cell writes to: the home, the lake when it is on this machine, the temporary folder."""
    local_lake = [Path(lake.path)] if lake.protocol in LOCAL_PROTOCOLS else []
    return list(dict.fromkeys([home, *local_lake, Path(tempfile.gettempdir())]))


def _peak_rss() -> int:
    """This process's peak resident memory, in bytes (``ru_maxrss`` is in KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
