"""The records a SQLite file keeps for the outage repayment (``owed``): its epoch and the bases put back, read with
the checks every stored value gets, so a damaged one is dropped and rebuilt instead of failing every operation."""

from __future__ import annotations

import json
import sqlite3
import uuid

from brave_search_mcp.ratelimit.plan import MAX_MONTH_REQUESTS
from brave_search_mcp.state.base import DropLog

MERGED_PREFIX = "merged:"  # records naming the outage counts already added (``owed``): sent again, added once
RESTORED_PREFIX = "restored:"  # per counter, the base put back into a file made afresh (``owed``)
EPOCH_KEY = "state-epoch"  # the file's random id (``Store.epoch``)


def epoch_id(stored: object) -> str | None:
    """A stored epoch's id (JSON text of 32 hex digits, as ``uuid4().hex``), or None when it is not one."""
    try:
        found = json.loads(stored) if isinstance(stored, str) and len(stored) <= 64 else None
    except ValueError:
        return None
    if isinstance(found, str) and len(found) == 32 and all(c in "0123456789abcdef" for c in found):
        return found
    return None


def whole_count(stored: object) -> int | None:
    """A stored count's JSON text as a whole number a month can reach, or None."""
    try:
        found = json.loads(stored) if isinstance(stored, str) and len(stored) <= 64 else None
    except ValueError:
        return None
    if isinstance(found, int) and not isinstance(found, bool) and 0 <= found <= MAX_MONTH_REQUESTS:
        return found
    return None


def read_epoch(conn: sqlite3.Connection, known: str | None, dropped: DropLog) -> str:
    """The file's epoch, made when it has none. A damaged one (not an id this project makes) is dropped (one warning)
    and rebuilt as ``known``, the id this process last read from the file, which still holds what it held (a new id
    would have every process put its counts back on top of them); as a new id when it read none."""
    row = conn.execute("SELECT value FROM records WHERE key = ?", (EPOCH_KEY,)).fetchone()
    if row is not None:
        found = epoch_id(row[0])
        if found is not None:
            return found
        dropped.note("state epoch", f"not an epoch id ({repr(row[0])[:40]})")
    epoch = known if row is not None and known is not None else uuid.uuid4().hex
    conn.execute("INSERT OR REPLACE INTO records VALUES (?, ?, NULL)", (EPOCH_KEY, json.dumps(epoch)))
    return epoch


def read_put_back(conn: sqlite3.Connection, restored: str, dropped: DropLog) -> int:
    """The base already put back for a counter (``owed``); a damaged record is dropped (one warning) and read as
    none, as a missing one is, instead of failing every repayment."""
    row = conn.execute("SELECT value FROM records WHERE key = ?", (restored,)).fetchone()
    if row is None:
        return 0
    found = whole_count(row[0])
    if found is None:
        dropped.note("restored monthly count", f"not a count ({repr(row[0])[:40]})")
        conn.execute("DELETE FROM records WHERE key = ?", (restored,))
        return 0
    return found
