"""``python -m tests.support.crash_entry ARGS…``: the babelbench CLI with one pause point armed, for crash tests.

``BABELBENCH_TEST_PAUSE`` names where the flow process stops in the middle of
a stage, and ``BABELBENCH_TEST_PAUSED`` the file it then writes; it waits
there until the test kills it (SIGKILL). The pause only decides *where* the
kill lands, deterministically instead of by timing; nothing else of the run
changes, and the rerun is the plain CLI.

Pause points (``kind:detail``):

* ``register:TABLE:CELL`` — every shard of the cell is written to the lake, the
  catalog has not switched to them (``Warehouse.replace_cells``);
* ``index:LANG`` — the embedded index of LANG is half written: its title field
  is saved, its body field not yet;
* ``commit:WHAT`` — on a DuckLake, the transaction of WHAT (a stage cell, ``stage[cell]``) holds every write of
  the cell and is about to commit.

Two meeting points, where the process does not wait for a kill but for others (``BABELBENCH_TEST_PAUSED`` is then a
folder; each process arriving writes a file in its subfolder named for the point's kind):

* ``meet:FLOW:N`` — a backfill has read the scopes of FLOW it will extend, and goes on once N processes have, so
  that concurrent backfills all read them before any of them extends one;
* ``running:FLOW:N`` — a run of FLOW (``clir-build``) has its ``runs`` row open, and goes on once N processes' runs
  have, so that their runs overlap in time by construction, not by luck.

Several points are armed at once when separated by ``;``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

PAUSE_ENV = "BABELBENCH_TEST_PAUSE"
PAUSED_ENV = "BABELBENCH_TEST_PAUSED"


def _pause(where: str) -> None:
    """Say where this process stopped, then wait for the kill (every thread that gets here waits)."""
    path = Path(os.environ[PAUSED_ENV])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{os.getpid()} {where}\n")
    tmp.replace(path)
    while True:
        time.sleep(3600)


def _meet(kind: str, count: int) -> None:
    """Say this process got to meeting point ``kind``, then wait until ``count`` processes have."""
    folder = Path(os.environ[PAUSED_ENV]) / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(os.getpid())).touch()
    while len(list(folder.iterdir())) < count:
        time.sleep(0.05)


def arm(spec: str) -> None:
    kind, _, detail = spec.partition(":")
    if kind == "register":
        from tasks.warehouse.db import Warehouse

        table, _, cell = detail.partition(":")
        original = Warehouse.replace_cells

        def replace_cells(self, changes, write=lambda _cur: None):  # type: ignore[no-untyped-def]
            if any(t == table and c == cell for t, c, *_ in changes):
                _pause(spec)
            return original(self, changes, write)

        Warehouse.replace_cells = replace_cells  # type: ignore[method-assign]
    elif kind == "index":
        from tasks.index import embedded

        original_add = embedded._ScoreFiles.add

        def add(self, name, vocabulary, scores):  # type: ignore[no-untyped-def]
            # <home>/indexes/tantivy/<lang>/.<fingerprint>.<attempt>
            if name == "body" and self.data.parent.name == detail:
                _pause(spec)
            return original_add(self, name, vocabulary, scores)

        embedded._ScoreFiles.add = add  # type: ignore[method-assign]
    elif kind == "commit":
        from tasks.warehouse import db

        original_commit = db.commit_with_replays

        def commit_with_replays(cursor, calls, what, *args):  # type: ignore[no-untyped-def]
            if what == detail:
                _pause(spec)
            return original_commit(cursor, calls, what, *args)

        db.commit_with_replays = commit_with_replays  # type: ignore[assignment]
    elif kind == "meet":
        from flows import backfill

        flow, _, count = detail.partition(":")
        original_scopes = backfill._scopes

        def scopes(bf, flow_name, by):  # type: ignore[no-untyped-def]
            found = original_scopes(bf, flow_name, by)
            if flow_name == flow:
                _meet(kind, int(count))
            return found

        backfill._scopes = scopes  # type: ignore[assignment]
    elif kind == "running":
        from contextlib import contextmanager

        from flows import clir

        flow, _, count = detail.partition(":")
        original_run = clir.tracked_run

        @contextmanager
        def tracked_run(wh, flow_name, *args, **kwargs):  # type: ignore[no-untyped-def]
            with original_run(wh, flow_name, *args, **kwargs) as run:
                if flow_name == flow:
                    _meet(kind, int(count))
                yield run

        clir.tracked_run = tracked_run  # type: ignore[assignment]
    else:
        raise SystemExit(f"{PAUSE_ENV}={spec!r}: unknown pause point")


def main() -> None:
    for spec in filter(None, os.environ.get(PAUSE_ENV, "").split(";")):
        arm(spec)
    from flows.cli import app

    sys.argv = ["babelbench", *sys.argv[1:]]
    app()


if __name__ == "__main__":
    main()
