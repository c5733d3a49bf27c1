"""The embedded warehouse: one DuckDB file in the home, which processes take turns at.

DuckDB lets one process at a time open the file, readers included, so no process keeps it: a process holds
it only while an operation runs (one shared connection per path, cursors per operation, writes serialised),
behind the cross-process lock ``warehouse.duckdb.lock``, which waiters take in the order of their markers in
``warehouse.duckdb.waiters/`` and which a waiter gives up on after ``BABELBENCH_WAREHOUSE_WAIT`` seconds
(:class:`WarehouseBusyError`).  A DuckLake has none of this (:mod:`tasks.warehouse.ducklake`).

See ``docs/warehouse.md``, "Several processes on one warehouse".
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout
from fsspec import AbstractFileSystem
from upath import UPath

from tasks.errors import BabelbenchError
from tasks.warehouse.lake import remove
from tasks.warehouse.waiting import WAIT_ENV, wait_seconds

log = logging.getLogger(__name__)

#: how long an idle connection stays open for the next operation of this process (nobody else waiting)
LINGER_SECONDS = 0.5
#: how often a waiter polls the lock, and a lingering holder looks for waiters
POLL_SECONDS = 0.02
#: when another process waits, the holder keeps the file at most this long after it opened it (its time slice),
#: so that a burst of operations shares one open; then it lets its in-flight operations end and hands the file over
SLICE_SECONDS = 0.25
#: an idle holder hands the file over to a waiter after this long (a next operation may be on its way)
HANDOVER_IDLE_SECONDS = 0.04
#: how long new operations of a holder wait for its in-flight ones to end before joining them anyway (a thread
#: inside an operation may be waiting for another thread's operation)
DRAIN_SECONDS = 5.0
#: a waiter refreshes its marker's mtime this often; one older than STALE_WAITER_SECONDS is ignored
HEARTBEAT_SECONDS = 1.0
STALE_WAITER_SECONDS = 15.0


class WarehouseBusyError(BabelbenchError):
    """Another process held the DuckDB file longer than this one was willing to wait."""


def _command() -> str:
    """This process's program and subcommand words, e.g. ``babelbench corpus ingest``.

    Options and the word after each are left out: an option's value may be a
    path or, worse, something secret, and the record is a plain file in the home.
    """
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"]
    after_option = False
    for arg in sys.argv[1:]:
        if arg.startswith("-"):
            after_option = "=" not in arg
        elif after_option:
            after_option = False
        elif len(words) < 4:
            words.append(arg[:40])
    return " ".join(words)


class _Database:
    """One DuckDB file as this process uses it: the shared connection, its reference count, the cross-process lock.

    Every :class:`Warehouse` of the path in this process goes through the one
    instance (:func:`_database`), so within the process there is one DuckDB
    database instance, one cursor per operation and one write lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self.holder_path = path.with_name(path.name + ".holder")
        self.waiters_dir = path.with_name(path.name + ".waiters")
        self.write_lock = threading.RLock()
        self._cond = threading.Condition()
        self._file_lock = FileLock(str(self.lock_path), thread_local=False)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._con_read_only = False
        self._filesystem: AbstractFileSystem | None = None
        self._refs = 0
        self._busy = False  # a thread is opening or closing the connection
        self._idle_since = 0.0
        self._opened_at = 0.0
        self._closer: threading.Thread | None = None
        self._local = threading.local()
        self._retired: list[UPath] = []  # superseded shard files, deleted when no operation may still read them
        self.opens = 0  # how many times this process opened the file (tests, measurements)

    # -- one operation -----------------------------------------------------------------
    @contextmanager
    def session(self, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """The open connection for one operation; nested operations of a thread reuse it."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            if not read_only and self._con_read_only:
                raise BabelbenchError(f"{self.path}: a write inside a read-only operation")
            con = self._con
        else:
            con = self._enter(read_only)
        self._local.depth = depth + 1
        try:
            assert con is not None
            yield con
        finally:
            self._local.depth = depth
            if not depth:
                self._exit()

    def _enter(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        wait = wait_seconds()
        started = time.monotonic()
        drain_deadline: float | None = None
        with self._cond:
            while True:
                if self._con is not None and not self._busy:
                    compatible = read_only or not self._con_read_only
                    others = compatible and not self._in_slice() and self._other_waiters()
                    if compatible and (not others or (drain_deadline is not None and time.monotonic() >= drain_deadline)):
                        self._refs += 1
                        return self._con
                    if self._refs == 0:  # idle: hand the file over (to a waiter, or reopen in the other mode)
                        self._close_locked()
                        continue
                    if others and drain_deadline is None:  # never past this operation's own deadline
                        drain_deadline = min(time.monotonic() + DRAIN_SECONDS, started + wait - POLL_SECONDS)
                elif self._con is None and not self._busy:
                    self._busy = True
                    break
                remaining = started + wait - time.monotonic()
                if remaining <= 0:
                    raise self._busy_error(time.monotonic() - started, wait, self._holder())
                self._cond.wait(min(POLL_SECONDS * 5, remaining))
        try:
            con = self._open(read_only, started, wait)
        except BaseException:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
            raise
        with self._cond:
            self._con, self._con_read_only = con, read_only
            self._refs = 1
            self._busy = False
            self._opened_at = time.monotonic()
            self.opens += 1
            self._cond.notify_all()
        return con

    def retire(self, paths: Sequence[UPath]) -> None:
        """Delete superseded shard files once no operation of this process that started before may still read them.

        A query binds a lake view's file list when it starts and opens the files as it scans, so a query that began
        before :meth:`Warehouse.replace_cells` committed still reads the old shards (another thread's stage reading
        other cells of the same table, say). The files therefore go when the operation count next reaches zero;
        other processes cannot be inside the file meanwhile (the cross-process lock), and folders left by a process
        that dies first are swept as abandoned (:func:`tasks.warehouse.lake.sweep_abandoned`).
        """
        with self._cond:
            if self._refs:
                self._retired += paths
                return
        remove(paths)

    def retiring_folders(self) -> set[str]:
        """The folders (filesystem paths) of shard files waiting in :meth:`retire`: not garbage yet."""
        with self._cond:
            return {path.parent.path for path in self._retired}

    def _exit(self) -> None:
        retired: list[UPath] = []
        with self._cond:
            self._refs -= 1
            if self._refs == 0:
                retired, self._retired = self._retired, []
                if LINGER_SECONDS <= 0 or (not self._in_slice() and self._other_waiters()):
                    self._close_locked()
                else:
                    self._idle_since = time.monotonic()
                    if self._closer is None:
                        self._closer = threading.Thread(target=self._close_when_idle, name="warehouse-closer", daemon=True)
                        self._closer.start()
            self._cond.notify_all()
        remove(retired)

    def _close_when_idle(self) -> None:
        """Close the lingering connection when it has been idle long enough, or at once when another process waits."""
        with self._cond:
            try:
                while self._con is not None:
                    if self._refs or self._busy:
                        self._cond.wait()  # every operation's end notifies
                    elif self._idle_long_enough():
                        self._close_locked()
                    else:
                        self._cond.wait(POLL_SECONDS)
            finally:
                self._closer = None

    def _in_slice(self) -> bool:
        return time.monotonic() - self._opened_at < SLICE_SECONDS

    def _idle_long_enough(self) -> bool:
        idle = time.monotonic() - self._idle_since
        if idle >= LINGER_SECONDS:
            return True
        return (idle >= HANDOVER_IDLE_SECONDS or not self._in_slice()) and self._other_waiters()

    def use_filesystem(self, filesystem: AbstractFileSystem) -> None:
        """Register the lake's fsspec filesystem on the open connection and on every later one, so views over its
        URLs read. Called inside an operation (the connection is open); one lake per warehouse, so once."""
        with self._cond:
            if self._filesystem is None:
                assert self._con is not None
                self._con.register_filesystem(filesystem)
                self._filesystem = filesystem

    def close_idle(self) -> None:
        """Close the connection now if no operation is using it."""
        with self._cond:
            if self._con is not None and self._refs == 0 and not self._busy:
                self._close_locked()

    # -- opening and closing the file ------------------------------------------------------
    def _open(self, read_only: bool, started: float, wait: float) -> duckdb.DuckDBPyConnection:
        """Take the cross-process lock (in turn), then open DuckDB; both within ``wait`` seconds of ``started``."""
        self._take_lock(started, wait)
        try:
            while True:
                try:
                    con = duckdb.connect(str(self.path), read_only=read_only)
                    if self._filesystem is not None:
                        con.register_filesystem(self._filesystem)
                    return con
                except duckdb.IOException as exc:
                    if "lock" not in str(exc).lower():
                        raise BabelbenchError(f"cannot open {self.path}: {exc}") from exc
                    # a process that does not use the lock file (a duckdb shell, an older babelbench) has the file
                    waited = time.monotonic() - started
                    if waited >= wait:
                        raise WarehouseBusyError(
                            f"{self.path} is busy: waited {waited:.1f} s ({WAIT_ENV}={wait:g}) for a process that does not"
                            f" take {self.lock_path.name} (a duckdb shell?) to close it: {exc}. Close it, or raise"
                            f" {WAIT_ENV}.") from exc
                    time.sleep(POLL_SECONDS * 5)
        except BaseException:
            self._drop_lock()
            raise

    def _take_lock(self, started: float, wait: float) -> None:
        self.waiters_dir.mkdir(parents=True, exist_ok=True)
        marker = self.waiters_dir / f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident()}"
        marker.write_text(json.dumps({"pid": os.getpid(), "command": _command()}))
        touched = time.monotonic()
        try:
            while True:
                if not self._waiters_before(marker.name):
                    try:
                        self._file_lock.acquire(timeout=0)
                        break
                    except Timeout:
                        pass
                now = time.monotonic()
                if now - started >= wait:
                    raise self._busy_error(now - started, wait, self._holder())
                if now - touched >= HEARTBEAT_SECONDS:  # still waiting (a marker removed as stale is put back)
                    try:
                        os.utime(marker)
                    except FileNotFoundError:
                        marker.write_text(json.dumps({"pid": os.getpid(), "command": _command()}))
                    touched = now
                time.sleep(POLL_SECONDS)
        finally:
            marker.unlink(missing_ok=True)
        record = {"pid": os.getpid(), "command": _command(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        temp = self.holder_path.with_name(f"{self.holder_path.name}.{os.getpid()}.tmp")
        try:  # who holds it, for the message of those who wait too long
            temp.write_text(json.dumps(record))
            temp.replace(self.holder_path)
        except BaseException:
            self._drop_lock()
            raise

    def _drop_lock(self) -> None:
        """Release the cross-process lock; the holder record goes first so it never names the next holder wrongly."""
        try:
            self.holder_path.unlink(missing_ok=True)
        finally:
            self._file_lock.release(force=True)

    def _close_locked(self) -> None:
        """Close the connection (checkpointing DuckDB's log into the file) and release the lock; ``_cond`` is held."""
        con, self._con = self._con, None
        if con is None:
            return
        try:
            con.close()
        finally:
            self._drop_lock()
            self._cond.notify_all()

    # -- who else is there -------------------------------------------------------------------
    def _markers(self) -> list[str]:
        """Fresh waiter markers of other processes, oldest first."""
        try:
            entries = list(os.scandir(self.waiters_dir))
        except FileNotFoundError:
            return []
        now = time.time()
        own = f"-{os.getpid()}-"
        fresh = []
        for entry in entries:
            if own in entry.name:
                continue
            try:
                age = now - entry.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < STALE_WAITER_SECONDS:
                fresh.append(entry.name)
            elif age > 4 * STALE_WAITER_SECONDS:  # left by a process that died while waiting
                Path(entry.path).unlink(missing_ok=True)
        return sorted(fresh)

    def _other_waiters(self) -> bool:
        return bool(self._markers())

    def _waiters_before(self, name: str) -> bool:
        markers = self._markers()
        return bool(markers) and markers[0] < name

    def _holder(self) -> str:
        try:
            record = json.loads(self.holder_path.read_text())
        except (OSError, ValueError):
            return "another process"
        return f"pid {record.get('pid')} ({record.get('command')}, since {record.get('since')})"

    def _busy_error(self, waited: float, wait: float, holder: str) -> WarehouseBusyError:
        return WarehouseBusyError(
            f"{self.path} is busy: waited {waited:.1f} s ({WAIT_ENV}={wait:g}) for {holder} to release it."
            f" A flow run holds it only while it reads or writes, so this means a very long operation or a stuck"
            f" process: wait for it, raise {WAIT_ENV}, or use another --home.")


_databases: dict[Path, _Database] = {}
_databases_lock = threading.Lock()
_inherited: list[dict[Path, _Database]] = []


def _forget_after_fork() -> None:
    """A forked child starts with no open warehouse; the parent's connections are kept referenced, never closed here."""
    global _databases, _databases_lock
    _inherited.append(_databases)
    _databases, _databases_lock = {}, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def database(path: Path) -> _Database:
    """The process's one :class:`_Database` for the DuckDB file at ``path``."""
    with _databases_lock:
        if path not in _databases:
            _databases[path] = _Database(path)
        return _databases[path]


@atexit.register
def _close_all() -> None:
    """Checkpoint and release every idle warehouse of this process at exit (the lock dies with the process anyway)."""
    with _databases_lock:
        databases = list(_databases.values())
    for db in databases:
        try:
            db.close_idle()
        except Exception as exc:  # noqa: BLE001 - exiting; the next open replays DuckDB's log
            log.debug("closing %s at exit: %s", db.path, exc)

