"""Workers computing stage cells at once, on the embedded DuckDB file and on a DuckLake with a PostgreSQL catalog.

Each worker is a process running ``tests/support/cell_writer.py`` (the worker of the many-writer tests): it opens
the warehouse, then computes its own cells of a toy stage through ``run_stage`` as every real stage does — a cell
writes ``--rows`` document rows as a Parquet shard of a lake table and as many keyed rows, and its outcome row, in
one commit (on a DuckLake; the embedded file takes turns between processes behind its lock). The workers say when
they have opened the warehouse and start their cells together, so start-up is not timed; a round ends when the
last worker exits.

Per backend (``embedded``, ``ducklake``) and per number of workers (1 and ``--workers``), best of ``--repeat``
rounds, each on a fresh warehouse:

* ``<backend>_<n>w_cells_min``: cells committed per minute by all the workers together;
* ``<backend>_<n>w_cell_ms``: wall-clock milliseconds per cell (the round's time ÷ its cells): with one worker,
  what a cell costs a single process, whose small cells (``--rows 10`` by default) are nearly all the warehouse's
  per-cell overhead — the fingerprint lookup, the writes, the outcome row, the commit.

``--work-ms`` gives each cell that much waiting before it writes, as a stage waiting on a model endpoint spends
most of its time: then the workers' cells overlap, and the rounds measure how the commits of many workers fare.

Then what a DuckLake costs a single-process user on a real command: ``<backend>_ingest_s``, ``babelbench corpus
ingest`` of the bundled sample's five wikis (one process, its cells on threads), best of ``--repeat``.

Ratios: ``ducklake_vs_embedded_cell_1w`` and ``ducklake_vs_embedded_ingest`` (> 1: a DuckLake is slower for one
process), ``ducklake_vs_embedded_cells_min_<n>w`` (> 1: more cells per minute with n workers on a DuckLake), and
per backend ``<backend>_scaling`` (n workers' cells per minute ÷ one worker's).

PostgreSQL (the distribution's server, :mod:`deployments.postgres`) runs in a temporary folder on a free loopback
port; without it the DuckLake half is left out (its metrics null), or fails the run under
``BABELBENCH_BENCH_PEERS=required`` (``make bench``).

Run: ``.venv/bin/python benchmarks/warehouse_writers.py [--workers 4] [--cells 10] [--rows 10] [--work-ms 0]
[--repeat 2]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, say  # noqa: E402
from deployments.postgres import Cluster, bin_dir, throwaway_cluster  # noqa: E402
from tasks.errors import ConfigError  # noqa: E402
from tasks.warehouse.location import DUCKLAKE_PREFIX, WAREHOUSE_ENV  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PEERS_ENV = "BABELBENCH_BENCH_PEERS"


@contextmanager
def postgres() -> Iterator[Cluster | None]:
    """A throwaway PostgreSQL cluster, or None (said why) when the server is not installed."""
    try:
        bin_dir()
    except ConfigError as exc:
        if os.environ.get(PEERS_ENV) == "required":
            raise SystemExit(f"PostgreSQL required ({PEERS_ENV}=required) but missing: {exc}") from exc
        say(f"PostgreSQL is not installed, the DuckLake half is left out: {exc}")
        yield None
        return
    with throwaway_cluster("babelbench-bench-pg-") as cluster:
        yield cluster


def warehouse_env(cluster: Cluster | None, home: Path) -> dict[str, str]:
    """The environment of a process on a fresh warehouse in ``home``: the embedded file, or a new DuckLake."""
    env = {k: v for k, v in os.environ.items() if k not in {WAREHOUSE_ENV, "BABELBENCH_LAKE", "PREFECT_API_URL"}}
    env |= {"BABELBENCH_HOME": str(home), "DO_NOT_TRACK": "1", "BABELBENCH_COMPUTE": "inline"}
    if cluster is not None:
        database = f"b{uuid.uuid4().hex[:12]}"
        cluster.create_database(database)
        env[WAREHOUSE_ENV] = DUCKLAKE_PREFIX + cluster.conninfo(database)
    return env


def round_seconds(env: dict[str, str], workers: int, cells: int, rows: int, work_ms: float, scratch: Path) -> float:
    """One round: ``workers`` processes computing ``cells`` cells each at once; seconds from go to the last exit."""
    go = scratch / f"go-{uuid.uuid4().hex[:8]}"
    processes = [subprocess.Popen(
        [sys.executable, "-m", "tests.support.cell_writer", *(f"w{w}c{c}" for c in range(cells)), "--rows", str(rows),
         "--work-ms", str(work_ms), "--start-after", str(go)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for w in range(workers)]
    while len(list(scratch.glob(f"{go.name}.ready.*"))) < workers:
        if any(p.poll() is not None for p in processes):
            break
        time.sleep(0.02)
    start = time.perf_counter()
    go.touch()
    for process in processes:
        output, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed:\n{output[-3000:]}")
    return time.perf_counter() - start


def ingest_seconds(env: dict[str, str], source: str) -> float:
    """``babelbench corpus ingest`` of the sample's wikis, one process; its seconds (the command's start included)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", "corpus", "ingest", "--lang", "en,de,fr,ja,zh",
                           "--source", source], cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"corpus ingest failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, default=4, help="Workers at once in the parallel rounds.")
    parser.add_argument("--cells", type=int, default=10, help="Cells each worker computes in a round.")
    parser.add_argument("--rows", type=int, default=10, help="Rows each cell writes (small: the overhead shows).")
    parser.add_argument("--work-ms", type=float, default=0.0,
                        help="Milliseconds each cell waits before writing, as a stage waiting on a model endpoint.")
    parser.add_argument("--repeat", type=int, default=2, help="Rounds per variant; the fastest is kept.")
    args = parser.parse_args()
    from tasks.sample.mirror import build_sample_mirror

    metrics: dict[str, float | int | str | None] = {"workers": args.workers, "cells": args.cells, "rows": args.rows,
                                                    "work_ms": args.work_ms}
    with tempfile.TemporaryDirectory(prefix="babelbench-bench-writers-") as tmp, postgres() as cluster:
        scratch = Path(tmp)
        source = build_sample_mirror(scratch / "mirror").root.as_uri()
        api = {"PREFECT_HOME": str(scratch / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        # the commands' local Prefect API started before any timing, stopped at the end
        subprocess.run([sys.executable, "-c", "from tasks.prefect_api import ensure_api; ensure_api()"], cwd=REPO,
                       env=os.environ | api, check=True, capture_output=True)
        backends = {"embedded": None, "ducklake": cluster} if cluster is not None else {"embedded": None}
        for backend, catalog in backends.items():
            for workers in (1, args.workers):
                best = float("inf")
                for attempt in range(args.repeat):
                    home = scratch / f"{backend}-{workers}w-{attempt}"
                    seconds = round_seconds(warehouse_env(catalog, home), workers, args.cells, args.rows, args.work_ms,
                                           scratch)
                    say(f"  {backend}, {workers} worker(s): {workers * args.cells} cells in {seconds:.2f} s")
                    best = min(best, seconds)
                metrics[f"{backend}_{workers}w_cells_min"] = round(workers * args.cells / best * 60, 1)
                metrics[f"{backend}_{workers}w_cell_ms"] = round(best / (workers * args.cells) * 1000, 1)
            ingest = min(ingest_seconds(warehouse_env(catalog, scratch / f"{backend}-ingest-{attempt}") | api, source)
                         for attempt in range(args.repeat))
            say(f"  {backend}: corpus ingest of the sample {ingest:.2f} s")
            metrics[f"{backend}_ingest_s"] = round(ingest, 2)
        subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop", "--force"], cwd=REPO,
                       env=os.environ | api, capture_output=True)

    def ratio(a: str, b: str) -> float | None:
        return round(metrics[a] / metrics[b], 2) if metrics.get(a) and metrics.get(b) else None  # type: ignore[operator]

    n = args.workers
    emit("warehouse_writers", metrics, {
        "ducklake_vs_embedded_cell_1w": ratio("ducklake_1w_cell_ms", "embedded_1w_cell_ms"),
        "ducklake_vs_embedded_ingest": ratio("ducklake_ingest_s", "embedded_ingest_s"),
        f"ducklake_vs_embedded_cells_min_{n}w": ratio(f"ducklake_{n}w_cells_min", f"embedded_{n}w_cells_min"),
        "embedded_scaling": ratio(f"embedded_{n}w_cells_min", "embedded_1w_cells_min"),
        "ducklake_scaling": ratio(f"ducklake_{n}w_cells_min", "ducklake_1w_cells_min"),
    })


if __name__ == "__main__":
    main()
