"""A PostgreSQL cluster of babelbench's own, from the distribution's package, in a folder it is given.

The production stack (``make stack``) keeps one in the home for the Prefect server, MLflow and the warehouse's
DuckLake catalog; the tests start a throwaway one.  Nothing needs root or a root-only path: the cluster's data,
socket and log are in its folder, it listens on loopback only, and it runs as the calling user — or, when that
is root (which PostgreSQL refuses), as ``BABELBENCH_PG_USER`` (default ``postgres``), who must be able to reach
the folder.  Local connections are trusted (socket and loopback); a cluster that other machines reach needs
passwords in ``pg_hba.conf``, as ``docs/scale-out.md`` shows.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tasks.errors import ConfigError
from tasks.processes import free_loopback_port

BIN_ENV = "BABELBENCH_PG_BIN"
USER_ENV = "BABELBENCH_PG_USER"
SUPERUSER = "babelbench"


def bin_dir() -> Path:
    """PostgreSQL's programs: ``$BABELBENCH_PG_BIN``, else ``pg_config --bindir``, else Debian's newest version."""
    configured = os.environ.get(BIN_ENV)
    candidates = [Path(configured)] if configured else []
    if shutil.which("pg_config"):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if found.returncode == 0:
            candidates.append(Path(found.stdout.strip()))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                           key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
                                           reverse=True)]
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise ConfigError("PostgreSQL's server programs (initdb, pg_ctl) were not found: install the distribution's"
                      f" package (Debian: apt-get install postgresql) or set {BIN_ENV} to their folder")


def _run_as() -> list[str]:
    """The command prefix that runs a PostgreSQL program as a user it accepts (never root)."""
    if os.geteuid() != 0:
        return []
    user = os.environ.get(USER_ENV, "postgres")
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise ConfigError(f"PostgreSQL refuses to run as root and there is no user {user!r} to run it as: create one"
                          f" (the postgresql package makes 'postgres') or set {USER_ENV}") from None
    return ["runuser", "-u", user, "--"]


@dataclass(frozen=True)
class Cluster:
    """A cluster in ``folder`` (``data/``, the socket, ``postgres.log``) on ``127.0.0.1:port``."""

    folder: Path
    port: int

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def conninfo(self, dbname: str) -> str:
        """libpq's connection string for database ``dbname`` (over loopback TCP, as another machine would)."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={SUPERUSER}"

    def url(self, dbname: str, driver: str = "postgresql") -> str:
        """The same as an SQLAlchemy URL (``postgresql+asyncpg`` for Prefect, ``postgresql+psycopg`` for MLflow)."""
        return f"{driver}://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def _pg(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [*_run_as(), str(bin_dir() / program), *args]
        result = subprocess.run(command, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise ConfigError(f"{program} {' '.join(args)} failed ({result.returncode}): "
                              f"{(result.stderr or result.stdout).strip()[-1500:]}")
        return result

    def _give_folder(self) -> None:
        """Make the folder the cluster's user's (when running as root), and check that user can reach it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        prefix = _run_as()
        if not prefix:
            return
        user = prefix[2]
        entry = pwd.getpwnam(user)
        for path in [self.folder, *self.folder.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
        reach = subprocess.run([*prefix, "test", "-w", str(self.folder)], capture_output=True)
        if reach.returncode != 0:
            raise ConfigError(f"{self.folder}: the PostgreSQL user {user!r} cannot reach this folder (a parent folder"
                              " is private to root): put the cluster elsewhere, or let that user traverse the path")

    def running(self) -> bool:
        return self._pg("pg_ctl", "status", "-D", str(self.data), check=False).returncode == 0

    def start(self, timeout: float = 60.0) -> None:
        """Create the cluster if its folder has none, then start it (a no-op when it runs already)."""
        self._give_folder()
        if not (self.data / "PG_VERSION").exists():
            self._pg("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                     "--locale=C.UTF-8")
        if self.running():
            return
        options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -c max_connections=200"
        self._pg("pg_ctl", "start", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                 "-t", str(int(timeout)))

    def stop(self) -> None:
        """Stop the cluster (fast shutdown: sessions are ended, committed work is kept)."""
        if self.running():
            self._pg("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def create_database(self, name: str) -> None:
        """Create database ``name`` unless it exists."""
        exists = self._pg("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, "-d", "postgres",
                          "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'")
        if exists.stdout.strip() != "1":
            self._pg("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self._pg("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise ConfigError(f"PostgreSQL on port {self.port} did not accept connections within {timeout:.0f} s;"
                                  f" see {self.log}")
            time.sleep(0.2)


@contextmanager
def throwaway_cluster(prefix: str) -> Iterator[Cluster]:
    """A new cluster in a temporary folder (under the system's temp dir, which the cluster's user can reach) on a
    free loopback port, stopped and deleted afterwards: for tests and benchmarks."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = Cluster(folder, free_loopback_port())
    try:
        cluster.start()
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
