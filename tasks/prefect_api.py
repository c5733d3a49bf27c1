"""Prefect's API for a babelbench process that was given none: a loopback server that dies with it.

With no ``PREFECT_API_URL``, Prefect would start its own temporary server on
first use — a plain subprocess that keeps running when the babelbench process
is killed. This module starts the same server (uvicorn serving Prefect's app,
UI off, the usual Prefect database under ``PREFECT_HOME``) so that the kernel
stops it when its parent dies, and points this process at it. A configured
``PREFECT_API_URL`` (a real server, a deployment's worker, the test harness) is
used as it is.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tasks.processes import child_dies_with_us, free_loopback_port, stop_process

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 120.0
SERVE_UI_URL = "http://127.0.0.1:4200"  # where `make serve` (prefect server start) shows the same database
_PORT_IN_USE_EXIT = 3  # uvicorn's exit code when it cannot bind

_server: subprocess.Popen[bytes] | None = None
_lock = threading.Lock()


def configured_api_url() -> str | None:
    """The API this process already talks to, if any."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def ensure_api() -> str:
    """The Prefect API URL for this process, starting a private loopback server when none is configured.

    Call from the main thread (the server's lifetime is tied to the thread that
    starts it). Safe to call repeatedly: the server is started once.
    """
    global _server
    with _lock:
        url = configured_api_url()
        if url:
            return url
        _server, url = _start()
        atexit.register(stop_api)
        os.environ["PREFECT_API_URL"] = url
        # This server has no UI and stops with the process; the runs stay in Prefect's database, which
        # `make serve` shows on its default address: point Prefect's "View at" links there.
        os.environ.setdefault("PREFECT_UI_URL", SERVE_UI_URL)
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
        return url


def server_pid() -> int | None:
    """The process id of the server this process started, if any (for tests and operators)."""
    return _server.pid if _server is not None else None


def stop_api() -> None:
    """Stop the server this process started (also registered at exit)."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        stop_process(server)


def _launch(port: int) -> subprocess.Popen[bytes]:
    import prefect

    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent),
               "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "error", "--lifespan", "on"]
    # The same switches Prefect's own temporary server sets: no UI, ephemeral-server behaviour.
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    env.pop("PREFECT_API_URL", None)
    return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, preexec_fn=child_dies_with_us())


def _start() -> tuple[subprocess.Popen[bytes], str]:
    """Start the server and wait until it answers its health check."""
    port = free_loopback_port()
    server = _launch(port)
    log.info("starting a Prefect API on http://127.0.0.1:%d (stops with this process)", port)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            code = server.poll()
            if code == _PORT_IN_USE_EXIT:  # another process took the port between our check and uvicorn's bind
                port = free_loopback_port()
                server = _launch(port)
                continue
            if code is not None:
                raise RuntimeError(f"the Prefect API server exited with code {code} while starting")
            try:
                if client.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                    return server, f"http://127.0.0.1:{port}/api"
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"the Prefect API server did not answer within {STARTUP_TIMEOUT_S:.0f} s")
