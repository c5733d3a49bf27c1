"""``python -m tests.support.cell_writer CELL… --rows N [--force]``: one worker computing stage cells, for the tests
of many writers on one warehouse.

Each cell of the toy stage ``toy-cells`` replaces its rows in a lake table (``documents_raw``: shards, language =
the cell) and in a keyed table (``features``: one row per item, model = the cell), through :func:`run_stage` as
every real stage does. Its rows depend only on the cell and ``--rows``, so a test computes what every table must
hold independently. ``BABELBENCH_TEST_PAUSE`` arms a pause point (``tests/support/crash_entry.py``); ``--work-ms`` makes each cell
wait that long before it writes, as a stage waiting on a model endpoint does (``benchmarks/warehouse_writers.py``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from tasks.stage import ReadFields, Stage, StageOutput, run_stage
from tasks.warehouse.db import Warehouse, insert_rows
from tasks.warehouse.lake import DOCUMENT_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir
from tests.support.crash_entry import PAUSE_ENV, arm

STAGE = Stage(name="toy-cells", version=1, writes=("documents_raw", "features"), cell="{cell}")


def document_rows(cell: str, rows: int) -> pa.Table:
    """The cell's documents: page ids 1..rows, titles naming the cell and the page."""
    ids = list(range(1, rows + 1))
    columns = {field.name: pa.nulls(rows, field.type) for field in DOCUMENT_SCHEMA}
    columns |= {"lang": pa.array([cell] * rows), "page_id": pa.array(ids, pa.int64()),
                "title": pa.array([f"{cell} page {n}" for n in ids]), "namespace": pa.array([0] * rows, pa.int32()),
                "is_redirect": pa.array([False] * rows), "is_disambiguation": pa.array([False] * rows)}
    return pa.table(columns, schema=DOCUMENT_SCHEMA)


def compute(wh: Warehouse, cell: str, rows: int, work: float = 0.0) -> Callable[[str], StageOutput]:
    """The cell's compute: ``work`` seconds of waiting (as a stage waits on a model endpoint), then its writes."""
    def run(fp: str) -> StageOutput:
        time.sleep(work)
        writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", cell, fp),
                             LAKE_TABLES["documents_raw"], fp)
        writer.add_table(document_rows(cell, rows))
        wh.replace_cell("documents_raw", cell, fp, writer.shards)
        with wh.transaction() as cur:
            cur.execute("DELETE FROM features WHERE benchmark = 'toy' AND model = ?", [cell])
            insert_rows(cur, "features", [("toy", f"i{n}", cell, "f", float(n), "ok", None, fp) for n in range(rows)])
        return StageOutput(rows=rows)

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cells", nargs="+")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--work-ms", type=float, default=0.0, help="milliseconds each cell waits before it writes")
    parser.add_argument("--start-after", type=Path, help="say ready (PATH.ready.PID), then wait for PATH to exist,"
                                                         " so that several workers start their cells at one moment")
    args = parser.parse_args()
    if os.environ.get(PAUSE_ENV):
        arm(os.environ[PAUSE_ENV])
    wh = Warehouse(Path(os.environ["BABELBENCH_HOME"]))
    if args.start_after:
        args.start_after.with_name(f"{args.start_after.name}.ready.{os.getpid()}").touch()
        while not args.start_after.exists():
            time.sleep(0.01)
    for cell in args.cells:
        ref = run_stage(wh, STAGE, cell, ReadFields(values={"rows": args.rows}), {}, compute(wh, cell, args.rows, args.work_ms / 1000),
                        force=args.force)
        print(ref.cell, ref.status, flush=True)


if __name__ == "__main__":
    main()
