"""Two flow runs on one home at once, in two processes; `babelbench sql` while a flow runs; a clear wait timeout.

The warehouse is held by a process only while one of its operations runs,
behind a lock file that waiters queue on (see ``tasks/warehouse/embedded.py``). These
tests run real CLI processes on the bundled sample served over loopback — on
the test session's Prefect API, as a CLI run and a worker's run share a server —
and compare the tables they leave with those of the same runs made one after
the other.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.corpus import CorpusParams, corpus_flow
from tasks.prefect_server import StatePaths
from tasks.processes import child_dies_with_us
from tasks.sample.mirror import build_sample_mirror, cirrus_name
from tasks.tracking import mark_crashed_runs
from tasks.warehouse.db import Warehouse
from tasks.warehouse.embedded import WarehouseBusyError
from tasks.warehouse.waiting import WAIT_ENV
from tests.support.loopback_http import LoopbackServer

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]

#: what a corpus run leaves, per table: the columns that do not depend on when or where it ran, nor on which
#: commit ran it (``code_version``: this test process computed it earlier than the CLI processes)
TABLES = {
    "documents": "*",
    "sitelinks": "*",
    "dumps": "wiki, lang, kind, dump_date, name, url, path, size, sha1, md5, verified",
    "artifacts": "stage, stage_version, cell, fingerprint, inputs, config, status, rows, issues, message",
    # a shard's folder ends with its write attempt's random id
    "lake_shards": "table_name, cell, fingerprint, regexp_replace(path, '-[0-9a-f]{8}/', '/'), rows",
    "ingest_issues": "*",
    "runs": "flow, status, message",
}


def _snapshot(home: Path) -> dict[str, tuple[int, str]]:
    """Per table: row count and a hash of its sorted rows (the home's own path written as ``<home>``)."""
    snapshot = {}
    with Warehouse(home, read_only=True) as wh:
        for table, columns in TABLES.items():
            rows = sorted(repr(row).replace(str(home), "<home>") for row in wh.query(f"SELECT {columns} FROM {table}"))
            snapshot[table] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
    return snapshot


def _env(**extra: str) -> dict[str, str]:
    """A CLI process's environment: the test session's Prefect API if it runs, MLflow in the home."""
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_API") and k not in {"BABELBENCH_HOME", "MLFLOW_TRACKING_URI"}}
    api = {"PREFECT_API_URL": PREFECT_API_URL.value()} if PREFECT_API_URL.value() else {}
    return env | api | {"BABELBENCH_COMPUTE": "inline", "DO_NOT_TRACK": "1"} | extra


def _cli(home: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "--home", str(home), *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=child_dies_with_us())


def _finish(process: subprocess.Popen[str], timeout: float = 600) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, out, err


def test_two_corpus_ingests_at_once_leave_what_the_same_runs_leave_one_after_the_other(
        prefect_api: None, tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    together, one_by_one = tmp_path / "together", tmp_path / "one-by-one"
    with LoopbackServer(root=mirror.root, lifetime=900) as server:
        for langs in (["en", "de"], ["fr", "ja"]):
            corpus_flow(CorpusParams(langs=langs, source=server.base_url, home=str(one_by_one), progress=False))
        # one dump of each run answers late, so both flow runs are surely in the middle of their work together
        for wiki in ("dewiki", "jawiki"):
            server.stall(f"/other/cirrussearch/{mirror.date}/{cirrus_name(wiki, mirror.date)}", 6)
        env = _env()
        runs = [_cli(together, env, "corpus", "ingest", "--lang", langs, "--source", server.base_url)
                for langs in ("en,de", "fr,ja")]
        results = [_finish(run) for run in runs]
    for code, out, err in results:
        assert code == 0, f"exit {code}\n{out[-3000:]}\n{err[-3000:]}"
        assert "Could not set lock" not in err and "is busy" not in err
    assert _snapshot(together) == _snapshot(one_by_one)
    with Warehouse(together, read_only=True) as wh:
        (a_start, a_end), (b_start, b_end) = wh.query("SELECT started_at, finished_at FROM runs ORDER BY started_at")
        counts = dict(wh.query("SELECT lang, count(*) FROM documents GROUP BY lang"))
    assert a_start < b_end and b_start < a_end  # they did overlap
    assert set(counts) == {"en", "de", "fr", "ja"}


def test_sql_answers_while_a_flow_runs_in_another_process(prefect_api: None, tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    home = tmp_path / "home"
    env = _env()
    with LoopbackServer(root=mirror.root, lifetime=900) as server:
        # dewiki's dump answers after 20 s: the flow run is mid-run for that long
        server.stall(f"/other/cirrussearch/{mirror.date}/{cirrus_name('dewiki', mirror.date)}", 20)
        flow = _cli(home, env, "corpus", "ingest", "--lang", "en,de", "--source", server.base_url)
        answers = []
        deadline = time.monotonic() + 300
        while flow.poll() is None and time.monotonic() < deadline:
            started = time.monotonic()
            sql = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "sql",
                                  "SELECT status FROM runs"], env=env, cwd=REPO, capture_output=True, text=True,
                                 timeout=120)
            running = flow.poll() is None
            if sql.returncode == 0 and "running" in sql.stdout and running:
                answers.append(time.monotonic() - started)
            elif sql.returncode != 0:
                assert "no warehouse at" in sql.stderr, sql.stderr  # only before the flow created it
            if len(answers) >= 3:
                break
            time.sleep(0.5)
        code, out, err = _finish(flow)
    assert len(answers) >= 3, f"`babelbench sql` never answered while the flow ran: {err[-3000:]}"
    assert code == 0, f"exit {code}\n{out[-3000:]}\n{err[-3000:]}"
    with Warehouse(home, read_only=True) as wh:
        assert wh.query("SELECT status FROM runs") == [("completed",)]
        assert {lang for (lang,) in wh.query("SELECT DISTINCT lang FROM documents")} == {"en", "de"}


_HOLDER = """
import sys, time
from pathlib import Path
from tasks.warehouse.db import Warehouse
wh = Warehouse(Path(sys.argv[1]))
with wh.transaction() as cur:
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_waiter_gives_up_with_a_clear_message_when_the_holder_never_releases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    Warehouse(home).close()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(home)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                              preexec_fn=child_dies_with_us())
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        monkeypatch.setenv(WAIT_ENV, "1.5")
        started = time.monotonic()
        with pytest.raises(WarehouseBusyError) as raised:
            Warehouse(home, read_only=True).query("SELECT count(*) FROM runs")
        waited = time.monotonic() - started
        message = str(raised.value)
        assert 1.5 <= waited < 10
        assert str(home / "warehouse.duckdb") in message
        assert "waited 1.5 s" in message and f"{WAIT_ENV}=1.5" in message
        assert f"pid {holder.pid} (" in message

        sql = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(home), "sql", "SELECT 1"],
                             env=_env(**{WAIT_ENV: "1"}), cwd=REPO, capture_output=True, text=True, timeout=120)
        assert sql.returncode == 2 and "is busy: waited 1.0 s" in sql.stderr and "Traceback" not in sql.stderr
    finally:
        holder.kill()
        holder.wait()
    # a holder that dies leaves no stale lock: the next operation goes through at once
    assert Warehouse(home, read_only=True).scalar("SELECT count(*) FROM runs") == 0


def test_a_run_of_another_live_process_is_not_marked_crashed(home: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with Warehouse(home) as wh:
            with wh.transaction() as cur:
                cur.execute("INSERT INTO runs (run_id, flow, started_at, status, params, code_version, pid, host)"
                            " VALUES ('other', 'corpus', now(), 'running', '{}', 'v', ?, ?)", [other.pid, socket.gethostname()])
            assert mark_crashed_runs(wh) == []
            other.kill()
            other.wait()
            assert mark_crashed_runs(wh) == ["other"]  # once its process is gone, the run is a crash
    finally:
        other.kill()
        other.wait()


def test_two_clis_on_a_fresh_machine_share_one_local_prefect_api_and_both_finish(tmp_path: Path) -> None:
    """No Prefect API configured and a Prefect home that does not exist yet: the two CLIs, started together, choose
    the local API one at a time, so one starts it (creating Prefect's database) and the other uses it; both runs
    finish, both are recorded in that database, and the server stops when asked."""
    mirror = build_sample_mirror(tmp_path / "mirror")
    home, prefect_home = tmp_path / "home", tmp_path / "fresh-prefect-home"
    env = {k: v for k, v in _env().items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(prefect_home)}
    paths = StatePaths.of(prefect_home)
    try:
        with LoopbackServer(root=mirror.root, lifetime=900) as server:
            for wiki in ("enwiki", "frwiki"):  # both runs are surely mid-flow together
                server.stall(f"/other/cirrussearch/{mirror.date}/{cirrus_name(wiki, mirror.date)}", 4)
            runs = [_cli(home, env, "corpus", "ingest", "--lang", lang, "--source", server.base_url)
                    for lang in ("en", "fr")]
            results = [_finish(run) for run in runs]
        for code, out, err in results:
            assert code == 0, f"exit {code}\n{out[-3000:]}\n{err[-3000:]}"
        assert paths.log.read_text().count("babelbench: Prefect API on") == 1  # one server started, for both
        with Warehouse(home, read_only=True) as wh:
            assert sorted(wh.query("SELECT status, count(*) FROM runs GROUP BY status")) == [("completed", 2)]
            assert {lang for (lang,) in wh.query("SELECT DISTINCT lang FROM documents")} == {"en", "fr"}
        flow_runs = subprocess.run([sys.executable, "-c", _COUNT_FLOW_RUNS], env=env, cwd=REPO, capture_output=True,
                                   text=True, timeout=300)
        assert flow_runs.returncode == 0, flow_runs.stderr[-3000:]
        assert flow_runs.stdout.split() == ["COMPLETED", "COMPLETED"]
        assert paths.log.read_text().count("babelbench: Prefect API on") == 1
    finally:
        subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop", "--force"], env=env, cwd=REPO,
                       capture_output=True, timeout=120)
    assert not paths.state.exists()


#: the flow runs recorded in the Prefect database of PREFECT_HOME, read through its local API
_COUNT_FLOW_RUNS = """
from prefect import get_client
from prefect.utilities.asyncutils import run_coro_as_sync
from tasks.prefect_api import ensure_api

ensure_api()

async def states():
    async with get_client() as client:
        return sorted(run.state.type.value for run in await client.read_flow_runs())

print(*run_coro_as_sync(states()))
"""
