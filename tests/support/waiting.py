"""Waiting in tests for something another process does (a server, a worker, a trigger): polled, never slept blind."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 90, every: float = 0.5) -> T:
    """``probe``'s first truthy result, polled every ``every`` seconds; an AssertionError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def finished(*processes: subprocess.Popen[str], timeout: float = 900) -> list[str]:
    """Each process's output (stdout, with stderr merged into it) once it has ended; an AssertionError with the end
    of the output of the first that did not exit 0."""
    outputs = []
    for process in processes:
        output, _ = process.communicate(timeout=timeout)
        assert process.returncode == 0, output[-4000:]
        outputs.append(output)
    return outputs
