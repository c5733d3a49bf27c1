"""Test-wide setup: Prefect on a throwaway local API, offline settings, paths to test data."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer
from tests.support.dask_cluster import cluster  # noqa: F401 - the fixture of the tests on a Dask cluster
from tests.support.postgres import ducklake, postgres  # noqa: F401 - fixtures for the DuckLake tests

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# Stage code logs outside flow runs in unit tests; the API log handler need not complain about it.
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
# Parse in-process by default (fast); the tests of the Dask path switch it on themselves.
os.environ.setdefault("BABELBENCH_COMPUTE", "inline")
# A command's local Prefect API outlives it (30 minutes idle for a user); most CLI tests give each command its own
# Prefect home, so their servers stop soon after the test instead of piling up for the rest of the session.
os.environ.setdefault("BABELBENCH_API_IDLE", "20")

#: Small real samples kept in the repository (tests/data/*/README.md: what, from where, licence): every clone has them.
TEST_DATA = Path(__file__).resolve().parent / "data"
#: The larger real samples beside the repository, optional: tests that also read them skip those cases without them.
SHARED_DATA_ENV = "BABELBENCH_SHARED_DATA"


def shared_data(*parts: str) -> Path:
    """A file or folder of ``../shared/data`` (or ``$BABELBENCH_SHARED_DATA``); the calling test skips when absent.

    The variable moves the location, for a checkout elsewhere, and lets a check
    hide the shared data (point it at a path that does not exist) without
    touching the folder other checkouts read.
    """
    root = Path(os.environ.get(SHARED_DATA_ENV) or Path(__file__).resolve().parents[1].parent / "shared" / "data")
    path = root.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared test data not found at {path} (clone the repo beside ../shared, or set {SHARED_DATA_ENV})")
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


@pytest.fixture
def language_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Add rows (CSV lines after ``lang,name,script``) to the language table for one test, then restore it."""
    from tasks.text.languages import reload_rules

    def add(rows: str) -> None:
        overrides = tmp_path / "languages.csv"
        overrides.write_text(f"lang,name,script\n{rows}\n", encoding="utf-8")
        monkeypatch.setenv("BABELBENCH_LANGUAGES", str(overrides))
        reload_rules()

    yield add
    monkeypatch.delenv("BABELBENCH_LANGUAGES", raising=False)
    reload_rules()


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A loopback OpenAI-compatible endpoint for one test (see tests/support/fake_llm_server.py)."""
    with FakeLLMServer(lifetime=300) as fake:
        yield fake


SAMPLE_LANGS = ("en", "de", "fr", "ja", "zh")


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory: pytest.TempPathFactory, prefect_api: None) -> Path:
    """A home holding the bundled sample's five languages, ingested once per session; copy it before writing."""
    from flows.corpus import CorpusParams, corpus_flow
    from tasks.sample.mirror import build_sample_mirror

    mirror = build_sample_mirror(tmp_path_factory.mktemp("sample-mirror"))
    path = tmp_path_factory.mktemp("sample-corpus")
    corpus_flow(CorpusParams(langs=list(SAMPLE_LANGS), source=mirror.root.as_uri(), home=str(path), progress=False))
    return path


@pytest.fixture
def sample_home(sample_corpus: Path, tmp_path: Path) -> Path:
    """A private, writable copy of the ingested sample for one test."""
    import shutil

    path = tmp_path / "sample-home"
    shutil.copytree(sample_corpus, path)
    return path


#: Generated test cases per test (node id), shown at the end of every run: a generated test states how much it
#: checked, so a generator that quietly produces fewer cases is seen.
_GENERATED: dict[str, int] = {}


@pytest.fixture
def generated_cases(request: pytest.FixtureRequest) -> Callable[[int], None]:
    """Record how many generated cases the calling test checked (added up over calls)."""

    def record(count: int) -> None:
        _GENERATED[request.node.nodeid] = _GENERATED.get(request.node.nodeid, 0) + count

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The generated cases of each test function, its parameter sets added up."""
    if not _GENERATED:
        return
    totals: dict[str, list[int]] = {}
    for nodeid, count in _GENERATED.items():
        total = totals.setdefault(nodeid.split("[")[0], [0, 0])
        total[0] += count
        total[1] += 1
    terminalreporter.section("generated cases")
    for test, (count, runs) in totals.items():
        terminalreporter.write_line(f"{test}: {count:,} cases in {runs} run{'s' * (runs != 1)}")
