"""The services the deployment helpers start (servers, workers): waiting until one answers over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx


def wait_http(url: str, what: str, running: Callable[[], bool], timeout: float) -> None:
    """Return once ``url`` answers 200; RuntimeError when the service stops first (``running()`` false), TimeoutError
    when it has not answered within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=3).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if not running():
            raise RuntimeError(f"{what} exited while starting")
        time.sleep(1)
    raise TimeoutError(f"{what} did not answer at {url} within {timeout:.0f} s")
