"""Test-wide setup: Prefect on a throwaway local API, offline settings, paths to shared data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# Parse in-process by default (fast); the tests of the Dask path switch it on themselves.
os.environ.setdefault("BABELBENCH_COMPUTE", "inline")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A file or folder of ``../shared/data``; the calling test is skipped with a reason when absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (clone the repo beside ../shared)")
    return path


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One temporary Prefect API (SQLite in a temp dir), started once for the tests that run flows."""
    from prefect.testing.utilities import prefect_test_harness

    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh babelbench home (warehouse, lake, MLflow store) for one test."""
    path = tmp_path / "home"
    monkeypatch.setenv("BABELBENCH_HOME", str(path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return path
