"""A killed babelbench process leaves no process behind: its cluster ends with it, the shared API when idle.

The CLI is run for real (the local Prefect API it starts, a local Dask cluster)
on the bundled sample served over loopback, with one language's dump stalled so
the flow is surely still running; then it is killed with SIGKILL, which no
handler in it can catch. Every process it had started must end by itself: its
Dask workers at once, and the local Prefect API, which outlives commands on
purpose, once it has been idle for its idle time (here 2 s) with its only user
gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tasks.prefect_server import StatePaths
from tasks.processes import child_dies_with_us
from tasks.sample.mirror import build_sample_mirror, cirrus_name
from tests.support.loopback_http import LoopbackServer
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


def _alive(pids: list[int]) -> list[int]:
    """The pids that still run (a zombie waiting for its reaper has ended)."""
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def test_sigkill_mid_flow_leaves_no_child_process(tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "BABELBENCH_COMPUTE": "dask", "DO_NOT_TRACK": "1",
            "BABELBENCH_API_IDLE": "2"}
    record = StatePaths.of(tmp_path / "prefect").state
    with LoopbackServer(root=mirror.root, lifetime=600) as server:
        # dewiki's download never finishes while the test runs, so the flow is mid-run when it is killed
        server.stall(f"/other/cirrussearch/{mirror.date}/{cirrus_name('dewiki', mirror.date)}", 600)
        command = [sys.executable, "-m", "flows.cli", "--home", str(tmp_path / "home"), "corpus", "ingest",
                   "--lang", "en,de", "--source", server.base_url]
        cli = subprocess.Popen(command, env=env, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, preexec_fn=child_dies_with_us())
        try:
            def started() -> list[psutil.Process] | None:
                assert cli.poll() is None, f"the CLI ended early: {cli.stderr.read().decode()[-2000:] if cli.stderr else ''}"
                children = psutil.Process(cli.pid).children(recursive=True)
                workers_up = any("multiprocessing" in _cmdline(c) or "distributed" in _cmdline(c) for c in children)
                return children if workers_up and record.exists() else None

            children = wait_for(started, "the local Prefect API and the Dask workers to start", timeout=300)
            api = json.loads(record.read_text())
            pids = [c.pid for c in children] + [api["pid"]]
            os.kill(cli.pid, signal.SIGKILL)
            cli.wait(timeout=30)
            deadline = time.monotonic() + 120
            while _alive(pids) and time.monotonic() < deadline:
                time.sleep(0.5)
            survivors = {pid: _cmdline(psutil.Process(pid)) for pid in _alive(pids)}
        finally:
            if cli.poll() is None:
                cli.kill()
    for pid in survivors:  # leave nothing behind even when the assertion fails
        psutil.Process(pid).kill()
    assert survivors == {}
    assert not record.exists()  # the API withdrew its record as it stopped
