"""One SQLite file's connection as the store uses it: each operation one short transaction, never waiting on the loop.

An operation runs on the event loop when the file is free (tens of microseconds: cheaper than a hop to a worker
thread, and never waiting: the connection's busy timeout is 0 there) and moves to a worker thread, waiting up to
``BUSY_TIMEOUT_MS``, only when another connection holds the write lock. WAL checkpoints (which fsync) run in a thread
of their own on a connection of their own (``wal``), every ``CHECKPOINT_EVERY`` operations, never inside a commit on
the event loop. A file that may be wiped from under a running process (the response cache, in the user's cache
directory) is opened again, in a worker thread, once it is no longer the file at its path: the process goes on
sharing it with the others instead of writing into a deleted file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio

from brave_search_mcp.state.base import StoreUnavailable
from brave_search_mcp.state.sqlite_file import BUSY_TIMEOUT_MS, busy, connect
from brave_search_mcp.state.wal import Checkpointer

logger = logging.getLogger(__name__)
T = TypeVar("T")

CHECKPOINT_EVERY = 200  # operations between two WAL checkpoints (in a thread; SQLite's own is turned off)


class _Busy(Exception):
    """Another connection holds the write lock; the operation changed nothing and may run again."""


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` now (None: none)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class FileConnection:
    """A connection to the file at ``path`` (None: opened at the first operation), serialised by a lock.

    ``follow``: before each operation, check that the file is still the one at ``path`` and open that one if not
    (a cleaner wiped the cache directory; another process may have made the new file already).
    """

    def __init__(self, path: Path, conn: sqlite3.Connection | None, *, tables: str, follow: bool = False) -> None:
        self.path = path
        self._conn = conn
        self._tables = tables
        self._follow = follow
        self._identity = _identity(path) if follow and conn is not None else None
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
        return self._conn is None or (self._follow and _identity(self.path) != self._identity)

    async def run(self, work: Callable[[sqlite3.Connection], T], *, tx: bool = True) -> T:
        """``work`` on the connection: on the event loop when the file is free, else in a worker thread that waits."""
        if self._replaced():
            await anyio.to_thread.run_sync(self._reopen)
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
                self._execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                try:
                    return self._attempt(work, tx, wait=True)
                finally:
                    self._execute("PRAGMA busy_timeout=0")

        return self._counted(await anyio.to_thread.run_sync(waiting))

    def _reopen(self) -> None:
        """Open the file now at the path (creating it), closing the one this had; in a worker thread."""
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"{self.path} is closed")
            if not self._replaced():  # another task did it meanwhile
                return
            self._close_connection()
            try:
                conn = connect(self.path, tables=self._tables)
            except (sqlite3.Error, OSError) as exc:
                raise StoreUnavailable(f"{self.path} cannot be opened ({type(exc).__name__}: {exc})") from exc
            self._conn, self._identity = conn, _identity(self.path)
            self._checkpointer = Checkpointer(self.path)
            logger.info("state: opened %s again (it was removed or replaced)", self.path)

    def _execute(self, statement: str) -> None:
        try:
            self.connection.execute(statement)
        except sqlite3.Error as exc:
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
            if not wait and busy(exc):
                raise _Busy from exc
            raise StoreUnavailable(f"{type(exc).__name__}: {exc}") from exc

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
