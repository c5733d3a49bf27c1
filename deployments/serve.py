"""``make serve``: a Prefect server, a worker for the ``babelbench`` pool and the MLflow UI, on loopback.

Each is a child process that ends with this one (Ctrl-C, or the terminal
closing, stops all three).  The server comes up first; once it answers, the
work pool is made if missing (``deployments.register``'s job, so deployments
can then be registered with ``make deploy``), the worker and the MLflow UI
start, and their URLs are printed.  Ports: ``PREFECT_PORT`` (4200) and
``MLFLOW_PORT`` (5000); the MLflow store is the home's (``--home`` /
``$BABELBENCH_HOME``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from deployments.register import WORK_POOL, ensure_pool
from tasks.processes import child_dies_with_us, stop_process
from tasks.settings import resolve_home
from tasks.tracking import tracking_uri

REPO = Path(__file__).resolve().parents[1]


def _start(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(args), cwd=REPO, env=env, preexec_fn=child_dies_with_us())


def _wait_for(url: str, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"{what} did not answer at {url} within {timeout:.0f} s")


def main() -> None:
    prefect_port, mlflow_port = os.environ.get("PREFECT_PORT", "4200"), os.environ.get("MLFLOW_PORT", "5000")
    api = f"http://127.0.0.1:{prefect_port}/api"
    env = os.environ | {"PREFECT_API_URL": api, "DO_NOT_TRACK": "1", "BABELBENCH_REPO": str(REPO)}
    python = sys.executable
    children = [_start(python, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", prefect_port,
                       env=env)]
    try:
        _wait_for(f"{api}/health", "the Prefect server")
        os.environ["PREFECT_API_URL"] = api
        ensure_pool()
        children.append(_start(python, "-m", "prefect", "worker", "start", "--pool", WORK_POOL, env=env))
        children.append(_start(python, "-m", "mlflow", "ui", "--host", "127.0.0.1", "--port", mlflow_port,
                               "--backend-store-uri", tracking_uri(resolve_home()), env=env))
        _wait_for(f"http://127.0.0.1:{mlflow_port}/health", "the MLflow UI")
        print(f"Prefect UI   http://127.0.0.1:{prefect_port}   (API {api}; worker on pool {WORK_POOL})\n"
              f"MLflow UI    http://127.0.0.1:{mlflow_port}\n"
              f"register the deployments: PREFECT_API_URL={api} make deploy      (Ctrl-C stops all three)",
              flush=True)
        while all(child.poll() is None for child in children):
            time.sleep(1)
        sys.exit("a service stopped: " + ", ".join(str(c.args[2:5]) for c in children if c.poll() is not None))
    except KeyboardInterrupt:
        pass
    finally:
        for child in reversed(children):
            stop_process(child)


if __name__ == "__main__":
    main()
