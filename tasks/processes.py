"""Child processes that never outlive the babelbench process that started them.

A flow started from the command line brings up helpers — Prefect's API server,
Dask workers. If the babelbench process is killed (SIGKILL, an OOM kill, a
segfault in native code) nothing in it runs again, so the children must notice
by themselves: on Linux the kernel sends them a signal when their parent dies
(``PR_SET_PDEATHSIG``). :func:`die_with_parent` arranges that from inside the
child, between fork and exec (see :func:`child_dies_with_us`). Dask's worker
processes need nothing: they watch a pipe to their parent and exit when it closes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable

import psutil

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux; a no-op elsewhere).

    ``parent_pid`` is the parent as it was before the child started: if the
    parent died in between (the child was reparented), the signal is sent at once.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)


def child_dies_with_us(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child ends when this process does.

    Popen must be called from a thread that lives as long as the child should
    (the main thread): the kernel ties the signal to the creating thread.
    """
    return functools.partial(die_with_parent, os.getpid(), sig)


def stop_process(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate a child politely, then kill it if it has not exited within ``timeout`` seconds; reap it."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (another process may still take it before it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_started(pid: int | None = None) -> float | None:
    """When process ``pid`` (this one by default) started, in seconds since the epoch; None if it is gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None


def process_alive(pid: int, started: float | None = None) -> bool:
    """Whether process ``pid`` of this host still runs (a zombie awaiting its reaper has ended) and, when
    ``started`` is given, is the same process that started then — not another that reused the pid."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(process.create_time() - started) < 0.01
    except psutil.NoSuchProcess:
        return False
