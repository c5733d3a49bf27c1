"""Where parallel work runs: a Dask cluster (local by default) or inline.

Workers only read inputs and write Parquet shards; the flow process registers
what they wrote. ``DASK_SCHEDULER_ADDRESS`` points at an existing cluster;
otherwise a local cluster on loopback is started on first use and shared by
every stage of the process until :func:`shutdown` (or exit).
``BABELBENCH_COMPUTE=inline`` runs the same functions in-process, in order —
for debugging and for tiny inputs where starting workers costs more than it saves.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import dask

from tasks.progress import Progress

T = TypeVar("T")
log = logging.getLogger(__name__)

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
MODE_ENV = "BABELBENCH_COMPUTE"

_client: Any = None
_cluster: Any = None
_lock = threading.Lock()


def mode() -> str:
    """``dask`` (default) or ``inline``."""
    chosen = os.environ.get(MODE_ENV, "dask").strip().lower()
    return chosen if chosen in {"dask", "inline"} else "dask"


def _get_client() -> Any:
    global _client, _cluster
    with _lock:
        if _client is None:
            from distributed import Client, LocalCluster

            address = os.environ.get(SCHEDULER_ENV)
            if address:
                log.info("using the Dask cluster at %s", address)
                _client = Client(address)
            else:
                logging.getLogger("distributed").setLevel(logging.WARNING)
                _keep_malloc_defaults()
                workers = max(1, min(4, os.cpu_count() or 1))
                log.info("starting a local Dask cluster (%d workers, loopback)", workers)
                _cluster = LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None, silence_logs=logging.WARNING,
                )
                _client = Client(_cluster)
                atexit.register(shutdown)
        return _client


def _keep_malloc_defaults() -> None:
    """Start local workers without the ``MALLOC_TRIM_THRESHOLD_`` Dask sets for them by default.

    With it set, glibc hands freed memory back to the system at once and no
    longer raises its own thresholds, so every large transient buffer (a
    block of decompressed lines, a batch of texts, Arrow's columns) is mapped
    and faulted in afresh: the same parse ran 15-30% slower with it. Memory
    stays bounded by the batches, not by glibc. Set in the process's Dask
    configuration, so that a worker the nanny restarts starts the same way.
    """
    environ = dask.config.get("distributed.nanny.pre-spawn-environ", {})
    dask.config.set({"distributed.nanny.pre-spawn-environ": {
        name: value for name, value in environ.items() if name != "MALLOC_TRIM_THRESHOLD_"}})


def release_freed_memory() -> None:
    """Hand the memory a large step freed back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    glibc keeps freed blocks below its mmap threshold (which rises to 32 MB as large arrays are freed) in its
    arenas for reuse, so after an index build of a million documents the flow process kept 1.3 GB that only
    another build could reuse, and the next stage's memory came on top of it.
    """
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return  # not glibc
    trim(0)


def thread_budget() -> int:
    """How many threads this process's own pools should keep busy: ``OMP_NUM_THREADS`` when set, else one per core.

    Dask starts its workers with ``OMP_NUM_THREADS=1`` (with one task thread each, one worker per core), so a
    search that fans out on threads inside a worker would otherwise run cores x workers threads on the cores.
    """
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return os.cpu_count() or 1


def parallelism() -> int:
    """How many tasks can run at once where :func:`map_parallel` sends them: 1 inline, else the cluster's task
    threads (starting the local cluster if it is not running yet)."""
    if mode() == "inline":
        return 1
    workers = _get_client().scheduler_info(n_workers=-1)["workers"].values()
    return max(1, sum(worker["nthreads"] for worker in workers))


def map_parallel(fn: Callable[..., T], items: Sequence[Any], *, scatter: bool = False, progress: Progress | None = None,
                 count: Callable[[Any, T], int] | None = None, **kwargs: Any) -> list[T]:
    """``[fn(item, **kwargs) for item in items]``, on Dask unless inline mode is chosen.

    ``scatter``: the items are data (megabytes each), sent straight to the
    workers rather than through the scheduler inside the task graph.
    ``progress`` advances by one part as each item's result arrives (in the
    order they finish), holding ``count(item, result)`` items.
    """
    def arrived(item: Any, result: T) -> T:
        if progress is not None:
            progress.advance(1, None if count is None else count(item, result))
        return result

    if mode() == "inline":
        return [arrived(item, fn(item, **kwargs)) for item in items]
    client = _get_client()
    futures = client.map(fn, client.scatter(list(items), hash=False) if scatter else items, pure=False, **kwargs)
    if progress is None:
        return client.gather(futures)
    from distributed import as_completed

    place = {future.key: position for position, future in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    for future, result in as_completed(futures, with_results=True):
        position = place[future.key]
        results[position] = arrived(items[position], result)
    return results


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run a batch without the cycle collector, turned back on (as it was) when the batch ends.

    The collector runs after every few hundred allocations and, every so
    often, walks every tracked object of the process; a batch that builds
    tens of thousands of small objects and no cycles (tokens, n-grams,
    values) sets off such full walks over a heap it does not own — measured
    at ~0.1 s in a 0.3 s batch of features, at random. Whatever garbage the
    batch leaves is collected after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def shutdown() -> None:
    """Close the client (and the local cluster this process started)."""
    global _client, _cluster
    with _lock:
        if _client is not None:
            _client.close()
        if _cluster is not None:
            _cluster.close()
        _client = _cluster = None
