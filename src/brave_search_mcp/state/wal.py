"""WAL checkpoints of the SQLite state file, in one long-lived thread on a connection of its own.

SQLite's automatic checkpoint fsyncs inside whichever commit crosses its threshold, on the event loop; the store
turns it off and asks this thread instead, every few hundred operations. A passive checkpoint holds neither the
event loop nor the operations' connection and never waits for a lock (a busy file is checkpointed next time). One
thread serves the store's whole life: starting a thread per checkpoint cost more than asking one to run.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)


class Checkpointer:
    """Moves the WAL of ``path`` into the database file when asked, in a thread started on the first request."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wanted = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Checkpoint soon (at once when the thread is idle; after the current one when it is busy)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="sqlite-checkpoint", daemon=True)
            self._thread.start()
        self._wanted.set()

    def close(self, timeout: float) -> None:
        """Stop the thread after the checkpoint under way, if any (waiting at most ``timeout`` seconds for it)."""
        self._closing = True
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:  # ends with close(); each turn waits for a request
                self._wanted.wait()
                self._wanted.clear()
                if self._closing:
                    return
                conn = self._checkpoint(conn)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        try:
            if conn is None:
                conn = sqlite3.connect(self._path, timeout=0, isolation_level=None)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            logger.debug("state: WAL checkpoint skipped (%s)", exc)
        return conn
