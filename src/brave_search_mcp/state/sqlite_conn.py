"""One SQLite file's connection as the store uses it: each operation one short transaction, never waiting on the loop.

An operation runs on the event loop when the file is free (tens of microseconds: cheaper than a hop to a worker
thread, and never waiting: the connection's busy timeout is 0 there) and moves to a worker thread, waiting up to
``LOCK_WAIT_SECONDS`` in all, only when another connection holds the write lock: a process stuck in a transaction
costs a call a second, then the store counts as down and calls run on memory. WAL checkpoints (which fsync) run in a
thread of their own on a connection of their own (``wal``), every ``CHECKPOINT_EVERY`` operations, never inside a
commit on the event loop. A file that is no longer the one at its path (a cleaner wiped the directory, another
process moved a corrupt file aside) is opened again, in a worker thread: the process goes on sharing it with the
others instead of writing into a deleted file. After any error but a busy one the connection is opened afresh on
the next operation (a file made read-only and writable again, a full disk, a file found corrupt: moved aside first).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio

from brave_search_mcp.state.base import StoreUnavailable
from brave_search_mcp.state.sqlite_file import BUSY_TIMEOUT_MS, busy, connect, corrupt, identity, move_aside
from brave_search_mcp.state.wal import Checkpointer

logger = logging.getLogger(__name__)
T = TypeVar("T")

CHECKPOINT_EVERY = 200  # operations between two WAL checkpoints (in a thread; SQLite's own is turned off)
LOCK_WAIT_SECONDS = 1.0  # the longest an operation waits for another connection's write lock
# After the file holding counts was found replaced, operations fail this long: the outage is recorded (and the counts
# this process knew kept for the new file) before any operation reads a count from the new file.
REPLACED_HOLD_SECONDS = 0.25


class _Busy(Exception):
    """Another connection holds the write lock; the operation changed nothing and may run again."""


class FileConnection:
    """A connection to the file at ``path`` (None: opened at the first operation), serialised by a lock.

    ``follow``: before each operation, check that the file is still the one at ``path`` and open that one if not
    (a cleaner wiped the directory; another process moved a corrupt file aside and may have made the new file).
    """

    def __init__(
        self, path: Path, conn: sqlite3.Connection | None, *, tables: str, follow: bool = True, counts: bool = False
    ) -> None:
        self.path = path
        self._conn = conn
        self._tables = tables
        self._follow = follow
        self._counts = counts  # the file holds counts: its replacement is an outage, so they are put back
        self._identity = identity(path) if conn is not None else None
        self._broken: BaseException | None = None  # the error after which the connection is opened afresh
        self._held_until = -1.0  # operations fail until then (``REPLACED_HOLD_SECONDS``)
        self._lock = threading.Lock()
        self._closed = False
        self._operations = 0  # since the last WAL checkpoint
        self._checkpointer = Checkpointer(path)

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (tests trace what it runs)."""
        if self._conn is None:
            raise StoreUnavailable(f"{self.path} is not open")
        return self._conn

    def _replaced(self) -> bool:
        return (
            self._conn is None or self._broken is not None or (self._follow and identity(self.path) != self._identity)
        )

    async def run(self, work: Callable[[sqlite3.Connection], T], *, tx: bool = True) -> T:
        """``work`` on the connection: on the event loop when the file is free, else in a worker thread that waits
        (``LOCK_WAIT_SECONDS`` at most, counted from now)."""
        if self._replaced():
            await anyio.to_thread.run_sync(self._reopen)
        if time.monotonic() < self._held_until:
            raise StoreUnavailable(self._replacement())
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        done = False
        if self._lock.acquire(blocking=False):  # free unless a worker thread is using the connection
            try:
                result = self._attempt(work, tx)
            except _Busy:
                pass  # another connection writes: nothing was done here, so do it again where waiting is fine
            else:
                done = True
            finally:
                self._lock.release()
            if done:
                return self._counted(result)

        def waiting() -> T:
            with self._lock:
                left = deadline - time.monotonic()
                if self._broken is not None:  # another operation failed meanwhile: the next one opens it afresh
                    raise StoreUnavailable(f"{self.path}: {type(self._broken).__name__}: {self._broken}")
                if left <= 0:
                    raise StoreUnavailable(self._locked())
                self._execute(f"PRAGMA busy_timeout={max(1, int(left * 1000))}")
                try:
                    return self._attempt(work, tx, wait=True)
                finally:
                    if self._conn is not None and self._broken is None:
                        self._execute("PRAGMA busy_timeout=0")

        return self._counted(await anyio.to_thread.run_sync(waiting))

    def _locked(self) -> str:
        return f"{self.path} is locked by another process for over {LOCK_WAIT_SECONDS:g} s"

    def _reopen(self) -> None:
        """Open the file now at the path (creating it; a corrupt one moved aside first), closing the one this had;
        in a worker thread."""
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"{self.path} is closed")
            if not self._replaced():  # another task did it meanwhile
                return
            broken, self._broken = self._broken, None
            replaced = self._conn is not None and broken is None  # the file at the path is another one now
            self._close_connection()
            if broken is not None and corrupt(broken):
                move_aside(self.path, self._identity)
            try:
                conn = connect(self.path, tables=self._tables)
            except (sqlite3.Error, OSError) as exc:
                raise StoreUnavailable(f"{self.path} cannot be opened ({type(exc).__name__}: {exc})") from exc
            self._conn, self._identity = conn, identity(self.path)
            self._checkpointer = Checkpointer(self.path)
            logger.info("state: opened %s again", self.path)
        if replaced and self._counts:
            self._held_until = time.monotonic() + REPLACED_HOLD_SECONDS
            raise StoreUnavailable(self._replacement())

    def _replacement(self) -> str:
        return f"{self.path} was replaced by a new file; its counts are put back"

    def _execute(self, statement: str) -> None:
        try:
            self.connection.execute(statement)
        except sqlite3.Error as exc:
            self._broken = exc
            raise StoreUnavailable(f"{type(exc).__name__}: {exc}") from exc

    def _attempt(self, work: Callable[[sqlite3.Connection], T], tx: bool, *, wait: bool = False) -> T:
        """Run ``work`` once (in one ``BEGIN IMMEDIATE`` transaction when ``tx``); the caller holds the lock.

        ``_Busy`` (only when not ``wait``) means another connection held the write lock and nothing was changed.
        """
        conn = self.connection
        try:
            if not tx:
                return work(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                self._roll_back(conn)
                raise
            return result
        except sqlite3.Error as exc:
            if busy(exc):
                if not wait:
                    raise _Busy from exc
                raise StoreUnavailable(self._locked()) from exc
            self._broken = exc  # opened afresh by the next operation (read-only, full, corrupt, closed...)
            raise StoreUnavailable(f"{self.path}: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _roll_back(conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):  # the error being raised says more
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _counted(self, result: T) -> T:
        """Every ``CHECKPOINT_EVERY`` operations, have the WAL moved into the file (``wal.Checkpointer``)."""
        self._operations += 1
        if self._operations >= CHECKPOINT_EVERY:
            self._operations = 0
            self._checkpointer.request()
        return result

    def _close_connection(self) -> None:
        """Stop the checkpoints and close the connection; the caller holds the lock."""
        self._checkpointer.close(timeout=BUSY_TIMEOUT_MS / 1000)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Close for good (in a worker thread: it waits for a checkpoint under way and for the lock)."""
        with self._lock:
            self._closed = True
            self._close_connection()
