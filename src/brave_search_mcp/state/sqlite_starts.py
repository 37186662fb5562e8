"""The starts table of the SQLite state: the recent starts of each upstream, as ``plan.decide`` reads them.

A start is recorded when a reservation grants it (``SqliteStore.reserve``), read only where the window rule looks
(``recent_starts``), deleted once no rule can read it, and moved when its request left late (``retime_start``):
the upstream counts a request when it arrives, so the window counts it from when it left.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import overload

from brave_search_mcp.ratelimit.plan import CLOCK_SKEW_SECONDS, Ask, keep_after, matters_after

PRUNE_BATCH_SECONDS = 1.0  # starts past keeping are deleted once they span this long (never read meanwhile)


class NewestStarts(Sequence[float]):
    """The newest ``cap`` starts of one upstream after ``since``, ascending, as ``plan.decide`` reads them: its length
    and a few positions counted from the end. Each is one indexed query over the starts after ``since`` alone (older
    ones cannot delay a start: ``plan.matters_after``), so a plan of 1,000 a second neither loads its starts into
    Python nor walks the 10 s of them the store keeps on every reservation."""

    def __init__(self, conn: sqlite3.Connection, name: str, cap: int, since: float, until: float = math.inf) -> None:
        self._conn, self._name, self._cap, self._since, self._until = conn, name, cap, since, until
        self._len: int | None = None

    def __len__(self) -> int:
        if self._len is None:
            sql = (
                "SELECT count(*) FROM (SELECT 1 FROM starts WHERE upstream = ? AND t > ? AND t <= ? "
                "ORDER BY t DESC LIMIT ?)"
            )
            found = self._conn.execute(sql, (self._name, self._since, self._until, self._cap)).fetchone()
            self._len = int(found[0])
        return self._len

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...

    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        size = len(self)
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(size))]
        position = index + size if index < 0 else index  # 0: the oldest of the newest ``cap``
        if not 0 <= position < size:
            raise IndexError(index)
        sql = "SELECT t FROM starts WHERE upstream = ? AND t > ? AND t <= ? ORDER BY t DESC LIMIT 1 OFFSET ?"
        found = self._conn.execute(sql, (self._name, self._since, self._until, size - 1 - position)).fetchone()
        return float(found[0])


def recent_starts(
    conn: sqlite3.Connection, name: str, now: float, limits: tuple[float, int] | None, ask: Ask
) -> NewestStarts:
    """The recent starts of ``name``, read only where the rule looks; older ones are deleted on the way, a
    ``PRUNE_BATCH_SECONDS`` worth at a time (a start deleted with every one recorded wrote two more pages)."""
    keep = keep_after(now, limits, ask.margin)
    oldest, newest = conn.execute("SELECT min(t), max(t) FROM starts WHERE upstream = ?", (name,)).fetchone()
    if oldest is not None and oldest <= keep - PRUNE_BATCH_SECONDS:
        conn.execute("DELETE FROM starts WHERE upstream = ? AND t <= ?", (name, keep))
    future = now + CLOCK_SKEW_SECONDS  # a start no process's clock could have made yet is a broken record
    if newest is not None and newest > future:
        conn.execute("DELETE FROM starts WHERE upstream = ? AND t > ?", (name, future))
    if limits is None:  # no plan: the rule reads no start
        return NewestStarts(conn, name, 0, now)
    return NewestStarts(conn, name, limits[1], matters_after(now, limits, ask.margin), future)


def retime_start(conn: sqlite3.Connection, name: str, at: float, sent: float) -> None:
    """Move one start of ``name`` recorded at ``at`` (the reservation's own time, stored exactly) to ``sent``;
    none is found once it was moved or deleted, so a second call changes nothing."""
    sql = "UPDATE starts SET t = ? WHERE rowid = (SELECT rowid FROM starts WHERE upstream = ? AND t = ? LIMIT 1)"
    conn.execute(sql, (sent, name, at))
