"""``make stack`` / ``make stack-down``: babelbench's production stack on one machine, as it runs on several.

``python -m deployments.stack up --workers N`` starts, in the background, each piece a team runs:

* PostgreSQL, the distribution's server, with its cluster in ``$BABELBENCH_HOME/stack/postgres`` on loopback
  (:mod:`deployments.postgres`: no root-only path; as root it runs as the ``postgres`` user), with one database
  each for Prefect, MLflow and the warehouse's DuckLake catalog;
* a Prefect server (API, UI, automations) whose database is PostgreSQL (``postgresql+asyncpg``);
* an MLflow tracking server whose store is PostgreSQL (``postgresql+psycopg``), serving the artifacts kept in
  ``stack/mlflow-artifacts``;
* the ``babelbench`` process work pool and N workers on it, each running one flow run at a time, with the
  warehouse on the DuckLake (``BABELBENCH_WAREHOUSE=ducklake:postgres:…``, data files in the home's ``lake/``
  or ``BABELBENCH_LAKE``), MLflow on the server, and this checkout as the flows' code.

It prints the URLs and writes ``stack/env.sh``, the variables a shell needs to use the stack (``source`` it, then
``make deploy`` and any ``babelbench`` command). What it started is recorded in ``stack/stack.json`` (pids and
their start times, so a reused pid is never taken for a service); ``up`` again starts only what is not running
(and adds or stops workers to make N), ``status`` says what runs, ``down`` stops the workers, the servers and
PostgreSQL, keeping every database and file. Ports: ``PREFECT_PORT`` (4200), ``MLFLOW_PORT`` (5000),
``BABELBENCH_PG_PORT`` (5433). ``docs/scale-out.md`` gives the same commands split over several machines.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deployments.postgres import Cluster
from deployments.register import WORK_POOL, ensure_pool
from deployments.services import wait_http
from tasks.errors import BabelbenchError, ConfigError
from tasks.processes import process_alive, process_started
from tasks.settings import resolve_home
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV

REPO = Path(__file__).resolve().parents[1]
DATABASES = ("prefect", "mlflow", "warehouse")
PORTS = {"postgres": ("BABELBENCH_PG_PORT", 5433), "prefect": ("PREFECT_PORT", 4200), "mlflow": ("MLFLOW_PORT", 5000)}
#: how long a service may take to answer after it started
START_SECONDS = 180.0
STOP_SECONDS = 30.0


def _port(name: str) -> int:
    variable, default = PORTS[name]
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"{variable}={raw!r}: expected a TCP port number")
    return int(raw)


@dataclass(frozen=True)
class Stack:
    """The stack whose state lives in ``home``/stack, on the given loopback ports."""

    home: Path
    postgres_port: int
    prefect_port: int
    mlflow_port: int

    @classmethod
    def configured(cls) -> Stack:
        """The stack of ``$BABELBENCH_HOME`` on the configured ports."""
        return cls(resolve_home(), _port("postgres"), _port("prefect"), _port("mlflow"))

    @property
    def folder(self) -> Path:
        return self.home / "stack"

    @property
    def cluster(self) -> Cluster:
        return Cluster(self.folder / "postgres", self.postgres_port)

    @property
    def prefect_api(self) -> str:
        return f"http://127.0.0.1:{self.prefect_port}/api"

    @property
    def mlflow_url(self) -> str:
        return f"http://127.0.0.1:{self.mlflow_port}"

    @property
    def warehouse(self) -> str:
        return DUCKLAKE_PREFIX + self.cluster.conninfo("warehouse")

    def client_env(self) -> dict[str, str]:
        """What a process needs to use the stack: the Prefect API, MLflow, the home and the warehouse."""
        return {"BABELBENCH_HOME": str(self.home), WAREHOUSE_ENV: self.warehouse, "PREFECT_API_URL": self.prefect_api,
                "MLFLOW_TRACKING_URI": self.mlflow_url}

    def _env(self) -> dict[str, str]:
        return os.environ | self.client_env() | {
            "PREFECT_HOME": str(self.folder / "prefect"), "DO_NOT_TRACK": "1", "BABELBENCH_REPO": str(REPO),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}

    # -- what runs ---------------------------------------------------------------------------
    @property
    def _record(self) -> Path:
        return self.folder / "stack.json"

    def recorded(self) -> dict[str, dict[str, Any]]:
        """The services this stack started, by name: pid, start time, log."""
        try:
            return json.loads(self._record.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}

    def _save(self, services: dict[str, dict[str, Any]]) -> None:
        temp = self._record.with_name(f".{self._record.name}.{os.getpid()}")
        temp.write_text(json.dumps(services, indent=2), encoding="utf-8")
        temp.replace(self._record)

    def running(self) -> dict[str, dict[str, Any]]:
        """The recorded services whose process still runs (the same process: its start time matches)."""
        return {name: service for name, service in self.recorded().items()
                if process_alive(service["pid"], service["started"])}

    # -- up ------------------------------------------------------------------------------------
    def up(self, workers: int) -> None:
        """Start whatever of the stack is not running; ``workers`` workers on the pool in the end."""
        if workers < 1:
            raise ConfigError(f"--workers {workers}: a stack needs at least one worker")
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        cluster = self.cluster
        cluster.start()
        cluster.wait_ready()
        for database in DATABASES:
            cluster.create_database(database)
        services = self.running()
        env = self._env()
        python = sys.executable
        if "prefect-server" not in services:
            services["prefect-server"] = self._start(
                "prefect-server", [python, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                                   str(self.prefect_port)],
                env | {"PREFECT_API_DATABASE_CONNECTION_URL": cluster.url("prefect", "postgresql+asyncpg"),
                       "PREFECT_UI_ENABLED": "true"})
            self._save(services)
        if "mlflow-server" not in services:
            services["mlflow-server"] = self._start(
                "mlflow-server", [python, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port",
                                  str(self.mlflow_port), "--workers", "1",
                                  "--backend-store-uri", cluster.url("mlflow", "postgresql+psycopg"),
                                  "--artifacts-destination", str(self.folder / "mlflow-artifacts")], env)
            self._save(services)
        self._wait(f"{self.prefect_api}/health", "the Prefect server", services["prefect-server"])
        self._wait(f"{self.mlflow_url}/health", "the MLflow server", services["mlflow-server"])
        _with_api(self.prefect_api, ensure_pool)
        self._create_warehouse()
        wanted = [f"worker-{n}" for n in range(1, workers + 1)]
        for name in wanted:
            if name not in services:
                services[name] = self._start(name, [python, "-m", "prefect", "worker", "start", "--pool", WORK_POOL,
                                                    "--name", f"babelbench-{name}", "--limit", "1"], env)
        for name in [n for n in services if n.startswith("worker-") and n not in wanted]:
            _stop(services.pop(name))
        self._save(services)

    def _start(self, name: str, command: list[str], env: dict[str, str]) -> dict[str, Any]:
        """Start ``command`` in a session of its own (it outlives this command; ``down`` stops its whole group)."""
        log = self.folder / "logs" / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        return {"pid": process.pid, "started": process_started(process.pid), "log": str(log)}

    def _wait(self, url: str, what: str, service: dict[str, Any]) -> None:
        try:
            wait_http(url, what, lambda: process_alive(service["pid"], service["started"]), START_SECONDS)
        except (RuntimeError, TimeoutError) as exc:
            raise BabelbenchError(f"{exc}; see {service['log']}") from exc

    def _create_warehouse(self) -> None:
        """Create the DuckLake (its schema, from the migrations) now, so that the first flow runs find it made."""
        from tasks.warehouse.db import Warehouse
        from tasks.warehouse.location import parse_location

        Warehouse(self.home, location=parse_location(self.warehouse, self.home)).close()

    def write_env(self) -> Path:
        """``stack/env.sh``: the stack's variables for a shell (``source`` it)."""
        path = self.folder / "env.sh"
        path.write_text("".join(f"export {name}='{value}'\n" for name, value in self.client_env().items()),
                        encoding="utf-8")
        return path

    # -- down ------------------------------------------------------------------------------------
    def down(self) -> list[str]:
        """Stop the workers, the servers and PostgreSQL (data kept); returns what was stopped."""
        services = self.running()
        order = sorted(services, key=lambda name: (not name.startswith("worker-"), name))
        for name in order:
            _stop(services[name])
        self._save({})
        stopped = order
        if self.cluster.data.exists() and self.cluster.running():
            self.cluster.stop()
            stopped.append("postgres")
        return stopped

    def status(self) -> list[str]:
        """One line per service: running (with its pid) or not."""
        running = self.running()
        lines = [f"{'postgres':<16} {'running' if self.cluster.data.exists() and self.cluster.running() else 'stopped'}"
                 f" (port {self.postgres_port}, cluster {self.cluster.folder})"]
        names = sorted(set(self.recorded()) | {"prefect-server", "mlflow-server"})
        lines += [f"{name:<16} " + (f"running (pid {running[name]['pid']})" if name in running else "stopped")
                  for name in names]
        return lines

    def summary(self) -> str:
        workers = sum(name.startswith("worker-") for name in self.running())
        return (f"PostgreSQL   127.0.0.1:{self.postgres_port}   (cluster {self.cluster.folder}; databases"
                f" {', '.join(DATABASES)})\n"
                f"Prefect UI   http://127.0.0.1:{self.prefect_port}   (API {self.prefect_api}, on PostgreSQL;"
                f" {workers} worker(s) on pool {WORK_POOL})\n"
                f"MLflow UI    {self.mlflow_url}   (store on PostgreSQL, artifacts in {self.folder / 'mlflow-artifacts'})\n"
                f"warehouse    {self.warehouse}\n"
                f"use it:      source {self.folder / 'env.sh'}   (then `make deploy`, `babelbench …`)\n"
                f"stop it:     make stack-down   (logs in {self.folder / 'logs'})")


def _with_api(api: str, call: Callable[[], None]) -> None:
    """Run ``call`` with ``PREFECT_API_URL`` set to ``api`` for it and the Prefect commands it starts."""
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = api
    try:
        call()
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def _stop(service: dict[str, Any]) -> None:
    """SIGTERM the service's process group (the service and what it started), then SIGKILL what remains."""
    pid = service["pid"]
    if not process_alive(pid, service["started"]):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline and process_alive(pid, service["started"]):
        time.sleep(0.2)
    if process_alive(pid, service["started"]):
        os.killpg(pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="Start what is not running (idempotent) and print the URLs.")
    up.add_argument("--workers", type=int, default=2, help="Process workers on the pool (one flow run each at a time).")
    commands.add_parser("down", help="Stop the workers, the servers and PostgreSQL (data kept).")
    commands.add_parser("status", help="Say what runs.")
    args = parser.parse_args(argv)
    try:
        stack = Stack.configured()
        if args.command == "up":
            stack.up(args.workers)
            stack.write_env()
            print(stack.summary(), flush=True)
        elif args.command == "down":
            stopped = stack.down()
            print(f"stopped: {', '.join(stopped)}" if stopped else "nothing of the stack was running")
        else:
            print("\n".join(stack.status()))
    except BabelbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
