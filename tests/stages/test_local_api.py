"""The local Prefect API that commands share: started by the first, reused by the next, stopped on demand or when
idle, and a stale record never trusted.

Every command here is a real process with no ``PREFECT_API_URL`` and a Prefect
home of its own, as a user's shell runs it; which server a command used is read
from the server's record and log, never from timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from tasks.prefect_server import StatePaths
from tasks.processes import child_dies_with_us, free_loopback_port, process_alive, process_started
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tasks" / "sample" / "mkqa_sample.jsonl"
CONNECT = "from tasks.prefect_api import ensure_api; print(ensure_api())"


@pytest.fixture
def prefect_home(tmp_path: Path) -> Iterator[StatePaths]:
    """A Prefect home of its own; whatever local server a test leaves there is stopped afterwards."""
    paths = StatePaths.of(tmp_path / "prefect")
    yield paths
    _run(paths, "-m", "flows.cli", "server", "stop", "--force")


def _env(paths: StatePaths, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k != "BABELBENCH_API_IDLE"}
    return env | {"PREFECT_HOME": str(paths.root.parent), "DO_NOT_TRACK": "1"} | extra  # a user's idle time


def _run(paths: StatePaths, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=_env(paths, **extra), cwd=REPO, capture_output=True, text=True,
                          timeout=600)


def _record(paths: StatePaths) -> dict | None:
    return json.loads(paths.state.read_text()) if paths.state.exists() else None


def _starts(paths: StatePaths) -> int:
    """How many servers this Prefect home has started (each writes one line to the log as it starts)."""
    return paths.log.read_text().count("babelbench: Prefect API on") if paths.log.exists() else 0


def test_a_second_command_reuses_the_server_the_first_started_and_server_stop_ends_it(
        prefect_home: StatePaths, tmp_path: Path) -> None:
    command = ["-m", "flows.cli", "--home", str(tmp_path / "home"), "import", "mkqa", "--source", str(SAMPLE)]
    first = _run(prefect_home, *command)
    assert first.returncode == 0, first.stderr[-3000:]
    started = _record(prefect_home)
    assert started is not None and process_alive(started["pid"], started["started"])  # it outlives the command
    second = _run(prefect_home, *command)
    assert second.returncode == 0, second.stderr[-3000:]
    assert " cached " in second.stdout  # the second import is a cache hit, run through the same API
    assert _record(prefect_home) == started and _starts(prefect_home) == 1
    assert list(prefect_home.users.iterdir()) == []  # both commands let go of it as they ended

    status = _run(prefect_home, "-m", "flows.cli", "server", "status")
    assert f"local Prefect API {started['url']}: pid {started['pid']}" in status.stdout
    stop = _run(prefect_home, "-m", "flows.cli", "server", "stop")
    assert stop.returncode == 0 and f"stopped the local Prefect API {started['url']}" in stop.stdout
    assert not process_alive(started["pid"], started["started"]) and _record(prefect_home) is None
    assert "no local Prefect API runs" in _run(prefect_home, "-m", "flows.cli", "server", "status").stdout


def test_a_record_of_an_ended_or_silent_process_is_replaced(prefect_home: StatePaths) -> None:
    """A record naming a pid that now belongs to another process (this test's: its start time differs) is not
    trusted; a recorded server that is alive but does not answer is stopped and replaced."""
    prefect_home.users.mkdir(parents=True)
    reused_pid = {"url": f"http://127.0.0.1:{free_loopback_port()}/api", "pid": os.getpid(), "started": 1.0,
                  "port": 1, "idle_seconds": 600, "prefect": version("prefect")}
    prefect_home.state.write_text(json.dumps(reused_pid))
    first = _run(prefect_home, "-c", CONNECT)
    assert first.returncode == 0, first.stderr[-3000:]
    replacement = _record(prefect_home)
    assert replacement["pid"] != os.getpid() and first.stdout.strip() == replacement["url"] != reused_pid["url"]

    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=child_dies_with_us())
    try:
        _run(prefect_home, "-m", "flows.cli", "server", "stop")
        port = free_loopback_port()  # nothing listens there
        prefect_home.state.write_text(json.dumps(replacement | {
            "pid": silent.pid, "started": process_started(silent.pid), "url": f"http://127.0.0.1:{port}/api"}))
        second = _run(prefect_home, "-c", CONNECT)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "does not answer" in second.stderr and silent.wait(timeout=60) is not None  # stopped
        assert _record(prefect_home)["pid"] not in (silent.pid, replacement["pid"]) and _starts(prefect_home) == 2
    finally:
        silent.kill()
        silent.wait()


def test_an_idle_server_stops_by_itself_and_a_used_one_is_not_stopped_without_force(prefect_home: StatePaths) -> None:
    user = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=child_dies_with_us())
    try:
        # another command uses the server from the start (its user file, as ensure_api writes it)
        prefect_home.users.mkdir(parents=True)
        (prefect_home.users / str(user.pid)).write_text(repr(process_started(user.pid)))
        assert _run(prefect_home, "-c", CONNECT, BABELBENCH_API_IDLE="1").returncode == 0
        server = _record(prefect_home)
        refused = _run(prefect_home, "-m", "flows.cli", "server", "stop")
        assert refused.returncode == 2 and f"serves 1 running command(s) (pid {user.pid})" in refused.stderr
        assert process_alive(server["pid"], server["started"])
        user.kill()
        user.wait()
        # its only user gone, the server withdraws its record and exits after 1 s without a command
        wait_for(lambda: not process_alive(server["pid"], server["started"]), "the idle server to stop", timeout=120)
        assert _record(prefect_home) is None and "stopping" in prefect_home.log.read_text()
    finally:
        user.kill()
        user.wait()
