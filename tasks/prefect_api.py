"""The Prefect API a babelbench command talks to: the configured one, else a local server that commands share.

With no ``PREFECT_API_URL``, Prefect would start a temporary server in every
process, and a command would pay that start (seconds) before doing anything.
Instead the first command that needs an API starts a loopback server
(:mod:`tasks.prefect_server`: Prefect's app, UI off, Prefect's usual database
under ``PREFECT_HOME``) that outlives it, and later commands reuse it. It stops
once no command has used it for ``BABELBENCH_API_IDLE`` seconds (30 minutes by
default), or by ``babelbench server stop``. Its record (pid, start time, port),
lock, users and log are in ``$PREFECT_HOME/babelbench-api/``: one server per
Prefect database. Commands choose or start it one at a time under the lock; a
record whose process has ended (or whose pid now belongs to another process)
is replaced, and a server that no longer answers is stopped and replaced. A
record left by another Prefect version is not reused: its server stops by
itself once idle. A configured ``PREFECT_API_URL`` (a real server, a
deployment's worker, the test harness) is used as it is.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import httpx

from tasks.errors import ConfigError
from tasks.prefect_server import StatePaths, live_users, read_state, withdraw_state
from tasks.processes import free_loopback_port, process_alive, process_started

log = logging.getLogger(__name__)

IDLE_ENV = "BABELBENCH_API_IDLE"
DEFAULT_IDLE_SECONDS = 1800.0
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
SERVE_UI_URL = "http://127.0.0.1:4200"  # where `make serve` (prefect server start) shows the same database
_ATTEMPTS = 3  # ports tried when another process takes the free port first

_lock = threading.Lock()
_registered: StatePaths | None = None


@dataclass(frozen=True)
class LocalApi:
    """The local server of a Prefect home, as its record and the process table show it."""

    url: str
    pid: int
    started: float
    idle_seconds: float
    prefect: str
    users: list[int]
    log: Path


def configured_api_url() -> str | None:
    """The API this process already talks to, if any."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def ensure_api() -> str:
    """The Prefect API URL for this process: the configured one, else the local server, started if none runs.

    This process counts as one of the server's users until it exits. Safe to
    call repeatedly and from several threads.
    """
    url = _connect(start=True)
    assert url is not None
    return url


def running_api() -> str | None:
    """The configured API, else the local server if one runs (this process then uses it); never starts one."""
    return _connect(start=False)


def local_api() -> LocalApi | None:
    """The running local server of this Prefect home, if any (a record whose process has ended does not count)."""
    paths = _paths()
    state = read_state(paths)
    if state is None or not process_alive(state["pid"], state["started"]):
        return None
    return LocalApi(state["url"], state["pid"], state["started"], state["idle_seconds"], state["prefect"],
                    live_users(paths), paths.log)


def stop_local_api(*, force: bool = False) -> LocalApi | None:
    """Stop the local server (None when none runs). Refused while other commands use it, unless ``force``."""
    from filelock import FileLock

    paths = _paths()
    if not paths.root.is_dir():
        return None
    with FileLock(str(paths.lock), timeout=STARTUP_TIMEOUT_S * 2, thread_local=False):
        server = local_api()
        if server is None:
            paths.state.unlink(missing_ok=True)
            return None
        others = [pid for pid in server.users if pid != os.getpid()]
        if others and not force:
            raise ConfigError(f"the local Prefect API at {server.url} serves {len(others)} running command(s)"
                              f" (pid {', '.join(map(str, others))}); stop it when they have finished, or pass --force")
        withdraw_state(paths, server.pid)  # no command chooses it from here on
    _end(server.pid, server.started)
    return server


def idle_seconds() -> float:
    """How long the local server waits without a command before it stops: ``BABELBENCH_API_IDLE``, in seconds."""
    raw = os.environ.get(IDLE_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_IDLE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{IDLE_ENV}={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise ConfigError(f"{IDLE_ENV}={raw!r}: expected a number of seconds > 0")
    return value


def _paths() -> StatePaths:
    from prefect.settings import PREFECT_HOME

    return StatePaths.of(Path(PREFECT_HOME.value()).expanduser().resolve())


def _connect(*, start: bool) -> str | None:
    from filelock import FileLock

    with _lock:
        url = configured_api_url()
        if url:
            return url
        paths = _paths()
        if not start and read_state(paths) is None:
            return None
        paths.users.mkdir(parents=True, exist_ok=True)
        with FileLock(str(paths.lock), timeout=STARTUP_TIMEOUT_S * 2, thread_local=False):
            _register(paths)  # before trusting the record: its server does not stop while we hold a user file
            state = _healthy(paths)
            if state is None:
                if not start:
                    _unregister()
                    return None
                state = _start(paths)
        url = state["url"]
        os.environ["PREFECT_API_URL"] = url
        # The server has no UI; the runs are in Prefect's database, which `make serve` shows on its default address:
        # point Prefect's "View at" links there.
        os.environ.setdefault("PREFECT_UI_URL", SERVE_UI_URL)
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
        return url


def _register(paths: StatePaths) -> None:
    """Hold a user file until this process exits (a killed process's file is dropped by the server's watcher)."""
    global _registered
    if _registered is not None:
        return
    (paths.users / str(os.getpid())).write_text(repr(process_started()))
    _registered = paths
    atexit.register(_unregister)


def _unregister() -> None:
    global _registered
    if _registered is not None:
        (_registered.users / str(os.getpid())).unlink(missing_ok=True)
        _registered = None


def _healthy(paths: StatePaths) -> dict | None:
    """The recorded server if it is this Prefect version's and answers; a dead or silent one's record is removed."""
    state = read_state(paths)
    if state is None or state.get("prefect") != version("prefect"):
        return None
    if not process_alive(state["pid"], state["started"]):
        paths.state.unlink(missing_ok=True)
        return None
    if _answers(state["url"]):
        return state
    log.warning("the local Prefect API (pid %s) does not answer at %s: replacing it", state["pid"], state["url"])
    withdraw_state(paths, state["pid"])
    _end(state["pid"], state["started"])
    return None


def _answers(url: str, timeout: float = 5.0) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _start(paths: StatePaths) -> dict:
    """Start a server, wait until it answers, record it (the caller holds the lock)."""
    idle = idle_seconds()
    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(paths.root.parent)  # absolute, whatever the server's working directory
    for _ in range(_ATTEMPTS):
        port, logged = free_loopback_port(), paths.log.stat().st_size if paths.log.exists() else 0
        launched = subprocess.run(
            [sys.executable, "-m", "tasks.prefect_server", "--port", str(port), "--state", str(paths.root),
             "--idle", repr(idle)], env=env, cwd=Path(__file__).resolve().parents[1], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=True)
        pid_text, started_text = launched.stdout.split()
        pid, started = int(pid_text), float(started_text)
        url = f"http://127.0.0.1:{port}/api"
        log.info("starting a local Prefect API on %s (pid %d; stops after %g s without a command)", url, pid, idle)
        if _wait_until_answering(url, pid, started):
            state = {"url": url, "pid": pid, "started": started, "port": port, "idle_seconds": idle,
                     "prefect": version("prefect")}
            temporary = paths.state.with_suffix(".tmp")
            temporary.write_text(json.dumps(state))
            os.replace(temporary, paths.state)
            return state
        said = _log_since(paths, logged)
        if "address already in use" not in said:  # else another process took the port first: try another
            raise RuntimeError(f"the local Prefect API server exited while starting; it wrote ({paths.log}):\n"
                               + said[-2000:])
    raise RuntimeError(f"the local Prefect API server found no free port in {_ATTEMPTS} tries; see {paths.log}")


def _wait_until_answering(url: str, pid: int, started: float) -> bool:
    """Whether the server answers before it exits; a server silent for the whole start-up time is stopped."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not process_alive(pid, started):
            return False
        if _answers(url, timeout=2.0):
            return True
        time.sleep(0.1)
    _end(pid, started)
    raise RuntimeError(f"the local Prefect API server did not answer within {STARTUP_TIMEOUT_S:.0f} s")


def _log_since(paths: StatePaths, offset: int) -> str:
    """What the server log gained after ``offset`` bytes (what the server just started wrote)."""
    try:
        with paths.log.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def _end(pid: int, started: float) -> None:
    """Terminate the server process ``pid`` (checked by its start time), killing it if it outstays the timeout."""
    if not process_alive(pid, started):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while process_alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.1)
    if process_alive(pid, started):
        os.kill(pid, signal.SIGKILL)
