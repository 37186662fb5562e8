"""Opening a SQLite state or cache file: WAL mode, the schema, and the migration of files older versions made.

Each file is shared by every process of a user, old versions and new alike: the schema is created if absent, and a
migration is one transaction that leaves tables every version's statements still run on. One that cannot run now
(another process holds the file too long, or the disk is full) leaves the file as it was: the next opening tries
again, and nothing depends on it meanwhile. A file SQLite calls corrupt (garbage bytes, a failed integrity check) is
moved aside to ``<name>.corrupt`` (the previous one replaced) and made afresh: state is rebuilt, never a reason for
every call to fail.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from brave_search_mcp.clock import Clock

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000  # how long an operation in a worker thread waits for another connection's write lock
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
_SHORT_READ = 522  # SQLITE_IOERR_SHORT_READ: the file is shorter than its own pages say (a WAL written over)
OPEN_PAUSE_SECONDS = 0.005  # opening a file another process is converting: tries 5 ms apart, growing to 50 ms

# The state: the rate limiter's plans and recent starts, the monthly counters, the breakers' records.
STATE_TABLES = """
CREATE TABLE IF NOT EXISTS plans (upstream TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS starts (upstream TEXT NOT NULL, t REAL NOT NULL);
CREATE INDEX IF NOT EXISTS starts_by_time ON starts (upstream, t);
CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS peers (member TEXT PRIMARY KEY, t REAL NOT NULL);
"""
# The cache: stored answers and pages, and the single-flight leases of the ones being fetched.
CACHE_TABLES = """
CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL NOT NULL,
                                  size INTEGER NOT NULL, used REAL NOT NULL);
DROP INDEX IF EXISTS cache_by_use;
CREATE INDEX IF NOT EXISTS cache_lru ON cache (used, key, size);
DROP INDEX IF EXISTS cache_by_expiry;
CREATE INDEX IF NOT EXISTS cache_expiry ON cache (expires, size);
CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID;
"""
ALL_TABLES = STATE_TABLES + CACHE_TABLES  # a file the user named (``sqlite:///path``) holds both


def busy(exc: sqlite3.Error) -> bool:
    """Another connection holds a lock this one needs (a moment's wait, not a broken file)."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES


class Corrupt(sqlite3.DatabaseError):
    """The file failed SQLite's integrity check."""


def corrupt(exc: BaseException) -> bool:
    """SQLite says the file is not a database, or a damaged one."""
    code = getattr(exc, "sqlite_errorcode", 0)
    return isinstance(exc, Corrupt) or code & 0xFF in _CORRUPT_CODES or code == _SHORT_READ


def identity(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` now (None: none)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def move_aside(path: Path, seen: tuple[int, int] | None) -> bool:
    """Move the corrupt file ``path`` (with its WAL and shared-memory files) to ``<name>.corrupt``, if it is still
    the file found corrupt (``seen``: another process may have moved it and made a new one already)."""
    if seen is None or identity(path) != seen:
        return False
    aside = path.with_name(path.name + ".corrupt")
    try:
        for suffix in ("-wal", "-shm", ""):  # the database last: a process opening it meanwhile finds no stale WAL
            source = Path(f"{path}{suffix}")
            if source.exists():
                os.replace(source, Path(f"{aside}{suffix}"))
    except OSError as exc:
        logger.warning("state: %s is corrupt and could not be moved aside (%s)", path, exc)
        return False
    logger.warning("state: %s was corrupt; moved aside to %s and made afresh", path, aside)
    return True


def connect(
    path: Path,
    *,
    tables: str = ALL_TABLES,
    pause: Callable[[float], None] = time.sleep,
    clock: Clock = time.monotonic,
) -> sqlite3.Connection:
    """Open the file, trying again while another process holds a lock the opening needs, for up to
    ``BUSY_TIMEOUT_MS``: switching a new file to WAL takes an exclusive lock, and SQLite answers "locked" at once,
    without its busy wait, so two hosts starting their servers together would otherwise leave one on memory."""
    deadline = clock() + BUSY_TIMEOUT_MS / 1000
    attempt = 1
    moved = False
    while True:  # bounded: the deadline, at most about a hundred tries, one file moved aside
        seen = identity(path)
        try:
            return _connect_once(path, tables)
        except sqlite3.Error as exc:
            if corrupt(exc) and not moved:
                moved = True
                move_aside(path, seen)
                continue
            if not busy(exc) or clock() >= deadline:
                raise
        pause(min(OPEN_PAUSE_SECONDS * attempt, 10 * OPEN_PAUSE_SECONDS))
        attempt += 1


def _connect_once(path: Path, tables: str) -> sqlite3.Connection:
    """Open (creating) the file in WAL mode with ``tables``; raises on a corrupt or unwritable file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # cached answers are the user's searches
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # Deleted rows are zeroed where their pages are written anyway, but freed pages are not written over (some
        # builds zero them: an evicted 50 KB answer cost a dozen more page writes); the next answer reuses them.
        conn.execute("PRAGMA secure_delete=FAST")
        conn.executescript(tables)
        checked = conn.execute("PRAGMA quick_check(1)").fetchone()
        if checked is None or checked[0] != "ok":
            raise Corrupt(f"integrity check: {checked[0] if checked else 'no answer'}")
        _migrate(conn)
        conn.execute("PRAGMA wal_autocheckpoint=0")  # SqliteStore checkpoints off the event loop
        conn.execute("PRAGMA busy_timeout=0")  # on the event loop an operation never waits (see SqliteStore._run)
    except BaseException:
        conn.close()
        raise
    return conn


# A lease is one row written and deleted per cache miss: WITHOUT ROWID keeps it in one b-tree (one page written,
# not a table's and its key index's). Same columns: older versions' statements run on either table.
_LEASES_WITHOUT_ROWID = (
    "CREATE TABLE leases_new (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
    "INSERT INTO leases_new SELECT key, owner, expires FROM leases",
    "DROP TABLE leases",
    "ALTER TABLE leases_new RENAME TO leases",
)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a file an older version made up to the schema (leases held meanwhile are kept)."""

    def leases_have_rowids() -> bool:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'leases'").fetchone()
        return row is not None and "WITHOUT ROWID" not in str(row[0]).upper()

    _forget_read_hosts(conn)
    if not leases_have_rowids():
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if leases_have_rowids():  # another process may have migrated it meanwhile
                for statement in _LEASES_WITHOUT_ROWID:
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        logger.info("state: leases table left as it is for now (%s)", exc)


# The read hosts' politeness rows older versions kept in the state file (one plan and its starts per site ever read,
# never pruned); it lives in each process's bounded memory now (``limiter(local=True)``).
_READ_HOSTS = "upstream >= 'read:' AND upstream < 'read;'"


def _forget_read_hosts(conn: sqlite3.Connection) -> None:
    """Delete those rows once: only a file that holds some is written (an opening takes no write lock otherwise)."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "plans" not in tables or conn.execute(f"SELECT 1 FROM plans WHERE {_READ_HOSTS} LIMIT 1").fetchone() is None:
        return
    try:
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"DELETE FROM plans WHERE {_READ_HOSTS}")
            conn.execute(f"DELETE FROM starts WHERE {_READ_HOSTS}")
    except sqlite3.Error as exc:
        logger.info("state: the read hosts' old rows are left for the next opening (%s)", exc)
