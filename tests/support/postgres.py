"""A throwaway PostgreSQL cluster for the tests that need one (the DuckLake warehouse's catalog).

It is the distribution's PostgreSQL, started by :mod:`deployments.postgres` in a temporary folder on a free
loopback port, once per test session; each test gets a database of its own.  Without PostgreSQL installed the
tests that need it skip, saying why — unless ``BABELBENCH_PG_TESTS=required`` (set by ``.ci/run``, which installs
it), where they fail instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from deployments.postgres import Cluster, bin_dir, throwaway_cluster
from tasks.errors import ConfigError
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV

PG_TESTS_ENV = "BABELBENCH_PG_TESTS"


def require_postgres() -> None:
    """Skip the calling test when PostgreSQL's server programs are missing, saying so; fail instead under
    ``BABELBENCH_PG_TESTS=required``."""
    try:
        bin_dir()
    except ConfigError as exc:
        if os.environ.get(PG_TESTS_ENV) == "required":
            pytest.fail(f"{PG_TESTS_ENV}=required but PostgreSQL is missing: {exc}")
        pytest.skip(f"PostgreSQL is not installed: {exc}")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """One PostgreSQL cluster for the session (a folder under the system's temp dir: pytest's is private to its
    user, and the cluster may run as another)."""
    require_postgres()
    with throwaway_cluster("babelbench-pg-") as cluster:
        yield cluster


def new_database(cluster: Cluster) -> str:
    """A fresh, empty database in ``cluster``: its name."""
    name = f"t{uuid.uuid4().hex[:12]}"
    cluster.create_database(name)
    return name


@pytest.fixture
def ducklake(postgres: Cluster, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``BABELBENCH_WAREHOUSE`` naming a DuckLake on a fresh database of the session's cluster (lake in the home)."""
    url = DUCKLAKE_PREFIX + postgres.conninfo(new_database(postgres))
    monkeypatch.setenv(WAREHOUSE_ENV, url)
    return url
