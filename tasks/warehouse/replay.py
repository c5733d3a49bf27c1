"""Transactions that a DuckLake can retry: what a block did is recorded and replayed when its commit conflicts.

A DuckLake settles concurrent writers optimistically: a commit that meets a logical conflict (it inserts into a
table that a transaction committed meanwhile deleted from, both deleted from one data file …) is refused, and the
writer must run its transaction again on the newer snapshot.  The warehouse's writers are ``with
wh.transaction() as cur:`` blocks, which cannot be run twice, so the block's cursor is a :class:`Recorder`: it
passes every call through and keeps the writes (statements, their parameters, registered Arrow tables) and what
each read returned.  After a conflict :func:`replay` runs the calls again in a new transaction; a read that now
returns something else means the block decided its writes on data that changed, and the replay stops with
:class:`StaleReads` (a stage cell then computes again) instead of committing writes made for another state.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from tasks.errors import BabelbenchError
from tasks.warehouse.waiting import WAIT_ENV, wait_seconds

log = logging.getLogger(__name__)

#: the first wait before a replay, in seconds; it doubles each time, with jitter, up to MAX_WAIT. A commit keeps
#: replaying until BABELBENCH_WAREHOUSE_WAIT seconds have passed since its first conflict (:mod:`waiting`)
FIRST_WAIT = 0.05
MAX_WAIT = 2.0


class CommitConflict(BabelbenchError):
    """A commit kept conflicting with other writers' commits after every replay."""


class StaleReads(CommitConflict):
    """A replay read data that changed since the block first read it: the block's writes no longer follow."""


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckLake refusing a commit for a concurrent one (retryable), not a broken statement."""
    return isinstance(exc, duckdb.Error) and "conflict" in str(exc).lower()


@dataclass
class _Call:
    method: str  # execute | executemany | register | unregister
    args: tuple[Any, ...]
    reads: list[tuple[str, tuple[Any, ...], Any]] = field(default_factory=list)  # (fetch method, its args, result)


class Recorder:
    """A DuckDB cursor that records what is done through it, for :func:`replay` (the methods writers use)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, claim: Callable[[str], None]) -> None:
        """``claim(name)``: make sure guard ``name`` has a row to rewrite (committed on its own)."""
        self.cursor = cursor
        self.calls: list[_Call] = []
        self._claim = claim
        self._guarded: set[str] = set()

    def guard(self, name: str) -> None:
        """Rewrite guard ``name``'s rows, so that this transaction conflicts with every concurrent one that does
        (once per transaction; the rows go with the calls, so a replay rewrites them again)."""
        if name in self._guarded:
            return
        self._claim(name)
        self.execute("DELETE FROM commit_guards WHERE name = ?", [name])
        self.execute("INSERT INTO commit_guards VALUES (?, now())", [name])
        self._guarded.add(name)

    def _call(self, method: str, *args: Any) -> Recorder:
        getattr(self.cursor, method)(*args)
        self.calls.append(_Call(method, args))
        return self

    def execute(self, sql: str, parameters: Any = None) -> Recorder:
        return self._call("execute", sql, parameters)

    def executemany(self, sql: str, parameters: Any = None) -> Recorder:
        return self._call("executemany", sql, parameters)

    def register(self, name: str, data: Any) -> Recorder:
        return self._call("register", name, data)

    def unregister(self, name: str) -> Recorder:
        return self._call("unregister", name)

    def _read(self, method: str, *args: Any) -> Any:
        result = getattr(self.cursor, method)(*args)
        if self.calls:
            self.calls[-1].reads.append((method, args, result))
        return result

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._read("fetchall")

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._read("fetchone")

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        return self._read("fetchmany", size)

    @property
    def description(self) -> Any:
        return self.cursor.description


def replay(cursor: duckdb.DuckDBPyConnection, calls: Sequence[_Call]) -> None:
    """Run ``calls`` again on ``cursor`` (inside a new transaction); :class:`StaleReads` when a read differs."""
    for call in calls:
        getattr(cursor, call.method)(*call.args)
        for method, args, expected in call.reads:
            found = getattr(cursor, method)(*args)
            if found != expected:
                sql = str(call.args[0])[:120]
                raise StaleReads(f"a concurrent commit changed what this transaction read ({sql!r}); it must be"
                                 " computed again on the new data")


def commit_with_replays(cursor: duckdb.DuckDBPyConnection, calls: Sequence[_Call], what: str,
                        before_commit: Callable[[duckdb.DuckDBPyConnection], None] = lambda _cur: None) -> int:
    """COMMIT the open transaction on ``cursor``; on a conflict, roll back and replay ``calls`` in a new one.

    ``before_commit`` runs in every replayed transaction after the calls (the first attempt ran it already).
    Returns how many replays it took. A DuckLake refuses a commit that overlaps another writer's on one table, so
    under many writers a commit may lose several times in a row: it is replayed, after a growing random wait, for
    up to ``BABELBENCH_WAREHOUSE_WAIT`` seconds from its first conflict, then :class:`CommitConflict` names ``what``.
    """
    wait, deadline, attempt = FIRST_WAIT, None, 0
    while True:
        try:
            if attempt:
                cursor.execute("BEGIN TRANSACTION")
                replay(cursor, calls)
                before_commit(cursor)
            cursor.execute("COMMIT")
            if attempt:
                log.info("%s: committed after %d replay(s) for concurrent writers", what, attempt)
            return attempt
        except BaseException as exc:
            rollback(cursor)
            if not is_conflict(exc):
                raise
            now = time.monotonic()
            deadline = deadline if deadline is not None else now + wait_seconds()
            if now >= deadline:
                raise CommitConflict(f"{what}: still conflicting with concurrent writers after {attempt} replay(s)"
                                     f" ({WAIT_ENV}={wait_seconds():g} s): {exc}") from exc
            time.sleep(min(wait * (0.5 + random.random()), deadline - now))
            wait = min(wait * 2, MAX_WAIT)
            attempt += 1


def rollback(cursor: duckdb.DuckDBPyConnection) -> None:
    """Leave no transaction open after a failed commit (DuckDB may already have ended it)."""
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error:
        pass
