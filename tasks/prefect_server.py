"""The local Prefect API process: Prefect's server app on loopback, shared by babelbench commands, gone when idle.

:mod:`tasks.prefect_api` starts it as ``python -m tasks.prefect_server`` and
reads the process id it prints: the process detaches (a new session, its
output in a log file) so that it outlives the command that started it, and
the next commands reuse it instead of paying a server start each. Each command
using it holds a *user* file (its pid) in the state folder; a watcher thread
drops the files of processes that have ended, and once no command has used the
server for the idle time it takes the state lock, withdraws the state file
(only its own: a newer server may have replaced it) and shuts uvicorn down.
Under that lock a starting command registers before it trusts the state file,
so a server never stops under a command that has just chosen it.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tasks.processes import process_alive, process_started

#: the state folder's entries, under Prefect's home
STATE_DIR, STATE_FILE, LOCK_FILE, USERS_DIR, LOG_FILE = "babelbench-api", "server.json", "lock", "users", "server.log"
#: a watcher checks this often at most (shorter idle times are checked twice per idle time)
CHECK_SECONDS = 5.0


@dataclass(frozen=True)
class StatePaths:
    """Where a Prefect home's local API keeps its record, lock, users and log."""

    root: Path

    @classmethod
    def of(cls, prefect_home: Path) -> StatePaths:
        return cls(prefect_home / STATE_DIR)

    @property
    def state(self) -> Path:
        return self.root / STATE_FILE

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def users(self) -> Path:
        return self.root / USERS_DIR

    @property
    def log(self) -> Path:
        return self.root / LOG_FILE


def live_users(paths: StatePaths) -> list[int]:
    """The pids of the processes registered as using the server that still run; the files of ended ones are
    removed."""
    alive = []
    for entry in paths.users.glob("*"):
        try:
            pid, started = int(entry.name), float(entry.read_text() or "nan")
        except (ValueError, OSError):  # a file being written, or not ours: not a user
            continue
        if process_alive(pid, started):
            alive.append(pid)
        else:
            entry.unlink(missing_ok=True)
    return sorted(alive)


def read_state(paths: StatePaths) -> dict | None:
    """The recorded server (pid, started, port, url, prefect version, idle seconds), None if there is none."""
    try:
        return json.loads(paths.state.read_text())
    except (OSError, ValueError):
        return None


def withdraw_state(paths: StatePaths, pid: int) -> None:
    """Remove the state file if it still names process ``pid`` (a newer server's record stays)."""
    state = read_state(paths)
    if state is not None and state.get("pid") == pid:
        paths.state.unlink(missing_ok=True)


def _watch(server: object, paths: StatePaths, idle_seconds: float) -> None:
    """Stop ``server`` (a uvicorn.Server) once no registered command has run for ``idle_seconds``."""
    from filelock import FileLock

    me = os.getpid()
    last_used = time.monotonic()
    while not getattr(server, "should_exit"):
        time.sleep(min(CHECK_SECONDS, idle_seconds / 2))
        if live_users(paths):
            last_used = time.monotonic()
            continue
        if time.monotonic() - last_used < idle_seconds:
            continue
        with FileLock(str(paths.lock), thread_local=False):
            if live_users(paths):  # a command registered while we waited for the lock
                last_used = time.monotonic()
                continue
            withdraw_state(paths, me)
        print(f"babelbench: no command used the Prefect API for {idle_seconds:g} s: stopping (pid {me})", flush=True)
        setattr(server, "should_exit", True)


def _serve(port: int, paths: StatePaths, idle_seconds: float) -> None:
    import uvicorn

    # the switches Prefect's own temporary server runs with: no UI, ephemeral-server services
    os.environ |= {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    os.environ.pop("PREFECT_API_URL", None)
    server = uvicorn.Server(uvicorn.Config("prefect.server.api.server:create_app", factory=True, host="127.0.0.1",
                                           port=port, log_level="error", lifespan="on"))
    print(f"babelbench: Prefect API on http://127.0.0.1:{port}/api (pid {os.getpid()}), stops after"
          f" {idle_seconds:g} s without a command", flush=True)
    threading.Thread(target=_watch, args=(server, paths, idle_seconds), name="idle-watch", daemon=True).start()
    try:
        server.run()
    finally:
        from filelock import FileLock

        with FileLock(str(paths.lock), thread_local=False):
            withdraw_state(paths, os.getpid())


def main(argv: list[str] | None = None) -> None:
    """Detach, then serve: the launching process prints the server's pid and exits at once."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", type=Path, required=True, help="the state folder (under Prefect's home)")
    parser.add_argument("--idle", type=float, required=True, help="seconds without a command before stopping")
    args = parser.parse_args(argv)
    paths = StatePaths(args.state)
    child = os.fork()  # single-threaded here: nothing is imported yet that starts a thread
    if child:
        print(child, process_started(child), flush=True)
        os._exit(0)
    os.setsid()  # out of the terminal's process group: Ctrl-C in the command's terminal does not reach it
    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    _serve(args.port, paths, args.idle)


if __name__ == "__main__":
    main()
