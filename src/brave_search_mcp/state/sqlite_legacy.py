"""Versions before issue 35 kept the counters in the cache directory, where cleaners wipe them (and the spending cap
with them): the first opening of a new state file moves them, once.

One process moves them, under the new file's write lock: the others wait for it, then find the file marked (its
``user_version``) and never read the old one. The old file's plans, recent starts, monthly counters and breakers'
records are copied; its cached answers are not (the cache starts afresh in its own file); then the old file is
removed. A move that fails logs one warning and the state starts afresh: it never fails a call.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sqlite3
from pathlib import Path
from typing import Any

from brave_search_mcp.state.sqlite_file import BUSY_TIMEOUT_MS

logger = logging.getLogger(__name__)

MOVED = 1  # a state file's user_version once an older version's file was looked for (and moved, if there was one)

# What is copied (the columns every version wrote), and how a row the new file already had would be merged (none
# has: the move comes before any operation; the rule says what could never lose a count): a month's count adds up
# (requests were sent under both), a plan or a record the new file has wins.
_TABLES = {
    "plans": ("upstream, state", "INSERT OR IGNORE INTO plans VALUES (?, ?)"),
    "starts": ("upstream, t", "INSERT INTO starts VALUES (?, ?)"),
    "counters": (
        "name, n, expires",
        "INSERT INTO counters VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET n = n + excluded.n, expires = max(expires, excluded.expires)",
    ),
    "records": ("key, value, expires", "INSERT OR IGNORE INTO records VALUES (?, ?, ?)"),
}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _valid(table: str, row: tuple[Any, ...]) -> bool:
    """A row as a version wrote it (anything else stays behind: it would be dropped when read anyway)."""
    if not isinstance(row[0], str):
        return False
    if table == "starts":
        return _finite(row[1])
    if table == "counters":
        return isinstance(row[1], int) and row[1] >= 0 and _finite(row[2])
    return isinstance(row[1], str) and (table == "plans" or row[2] is None or _finite(row[2]))


def _old_rows(legacy: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The old file's rows, read as of one moment; none when there is no old file."""
    if not legacy.is_file():
        return {}
    uri = f"{legacy.resolve().as_uri()}?mode=rw"  # never creates it
    old = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        tables = {name for (name,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        old.execute("BEGIN")  # one read transaction: every table as of one moment
        return {
            table: [row for row in old.execute(f"SELECT {columns} FROM {table}") if _valid(table, row)]
            for table, (columns, _) in _TABLES.items()
            if table in tables
        }
    finally:
        old.close()


def _remove(legacy: Path) -> None:
    """The old file goes (its cached answers with it: it lies in the cache directory, safe to wipe)."""
    for name in (legacy.name, f"{legacy.name}-wal", f"{legacy.name}-shm"):
        with contextlib.suppress(OSError):
            (legacy.parent / name).unlink(missing_ok=True)


def _move(conn: sqlite3.Connection, legacy: Path) -> bool:
    """One transaction on the state file: copy the old file's rows unless another process did; whether it did here."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows: dict[str, list[tuple[Any, ...]]] = {}
        if conn.execute("PRAGMA user_version").fetchone()[0] < MOVED:  # nobody did it while this one waited
            rows = _old_rows(legacy)
            for table, found in rows.items():
                conn.executemany(_TABLES[table][1], found)
            conn.execute(f"PRAGMA user_version = {MOVED}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if rows:
        moved = ", ".join(f"{len(found)} {table}" for table, found in rows.items())
        logger.info("state: moved %s from %s", moved, legacy)
    return bool(rows)


def adopt_legacy(conn: sqlite3.Connection, legacy: Path) -> None:
    """Move what an older version kept at ``legacy`` into the state file ``conn`` is open on, unless it was done."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= MOVED:
        return
    moved = False
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # another process may be moving them now: wait for it
    try:
        moved = _move(conn, legacy)
    except (sqlite3.Error, OSError) as exc:
        logger.warning("state: the counters in %s could not be moved (%s); starting afresh", legacy, exc)
        with contextlib.suppress(sqlite3.Error):
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute(f"PRAGMA user_version = {MOVED}")  # once: the next opening does not try again
    finally:
        conn.execute("PRAGMA busy_timeout=0")
    if moved:
        _remove(legacy)
