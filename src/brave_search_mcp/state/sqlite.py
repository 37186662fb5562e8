"""The default shared state: SQLite files per user, so every server, CLI and library process shares one budget.

Two files by default: the state (plans, recent starts, the monthly counters under the spending cap, the breakers'
records) in the user's state directory, and the response cache (answers, pages and their single-flight leases) in
their cache directory, so wiping the cache loses no count. Every operation touches one of them only: each is one
short ``BEGIN IMMEDIATE`` transaction on its file (``sqlite_conn``); nobody holds a lock while waiting on the
network (a single-flight "lock" is a lease row with an expiry). A file the user names (``sqlite:///path``) holds
both. The first opening of a new state file moves the counters an older version kept in the cache directory
(``sqlite_legacy``). A corrupt file is moved aside and made afresh (``sqlite_file``); a state file that cannot be
opened or written (a read-only file or directory, a full disk, a lock held for over a second) logs one warning and
the process runs on memory until the file works again, tried every few seconds: state is an optimisation, never a
reason for a call to fail; a cache file that cannot be opened degrades the cache alone.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from cachetools import LRUCache

from brave_search_mcp.logs import OnceEach
from brave_search_mcp.ratelimit.plan import (
    MAX_MONTH_REQUESTS,
    Ask,
    Decision,
    PlanState,
    decide,
)
from brave_search_mcp.state.base import DropLog, StateBackend, StateOptions
from brave_search_mcp.state.journal import Journal
from brave_search_mcp.state.owed import Batch
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.state.sqlite_conn import FileConnection
from brave_search_mcp.state.sqlite_epoch import MERGED_PREFIX, RESTORED_PREFIX, read_epoch, read_put_back
from brave_search_mcp.state.sqlite_file import ALL_TABLES, CACHE_TABLES, STATE_TABLES, connect
from brave_search_mcp.state.sqlite_legacy import adopt_legacy
from brave_search_mcp.state.sqlite_peers import SqliteHeartbeat
from brave_search_mcp.state.sqlite_starts import recent_starts, retime_start

logger = logging.getLogger(__name__)
T = TypeVar("T")

PLANS_KEPT = 256  # plans whose stored JSON a store remembers (each upstream's latest one or two)
MERGED_KEPT_SECONDS = 7 * 86400.0


class SqliteStore:
    """The Store protocol on two files (or one): the limiter's numbers and the records on ``state``, the cached
    values and their leases on ``cache`` (None: ``state`` holds them too)."""

    def __init__(
        self, state: FileConnection, cache: FileConnection | None = None, *, max_entries: int, max_bytes: int | None
    ) -> None:
        self.state = state
        self.cache = cache if cache is not None else state
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self.dropped = DropLog()
        self._plan_of: LRUCache[str, PlanState] = LRUCache(PLANS_KEPT)  # stored JSON -> plan
        self._text_of: LRUCache[PlanState, str] = LRUCache(PLANS_KEPT)
        self._warnings = OnceEach(logger)
        self._known_epoch: str | None = None  # the file's epoch as this process last read it

    def location(self) -> str:
        """The state file."""
        return str(self.state.path)

    def cache_location(self) -> str:
        """The cache file."""
        return str(self.cache.path)

    def _plan(self, conn: sqlite3.Connection, name: str, init: PlanState | None) -> PlanState | None:
        """The stored plan; ``init`` is stored and returned when there is none (None: leave it absent). A record
        that does not decode to a plan any rule could make is dropped (one warning), then rebuilt like a missing
        one: never raised on every call."""
        row = conn.execute("SELECT state FROM plans WHERE upstream = ?", (name,)).fetchone()
        if row is not None:
            plan = self._decoded(row[0])
            if plan is not None:
                return plan
            conn.execute("DELETE FROM plans WHERE upstream = ?", (name,))
        if init is not None:
            conn.execute("INSERT INTO plans VALUES (?, ?)", (name, self._encoded(init)))
        return init

    def _decoded(self, text: object) -> PlanState | None:
        """A stored plan's JSON, parsed once: most reads find the text this process last read or wrote; None (and
        one warning) when it is not a plan's."""
        plan = self._plan_of.get(text) if isinstance(text, str) else None
        if plan is None:
            try:
                found = json.loads(text) if isinstance(text, str | bytes) else None
                if not isinstance(found, dict):
                    raise ValueError("not a JSON object")
                plan = PlanState.from_json(found)
            except (ValueError, TypeError, RecursionError) as exc:
                self.dropped.note("rate-limit plan", str(exc)[:120])
                return None
            if isinstance(text, str):
                self._plan_of[text] = plan
        return plan

    def _encoded(self, plan: PlanState) -> str:
        text = self._text_of.get(plan)
        if text is None:
            text = self._text_of[plan] = json.dumps(plan.to_json())
            self._plan_of[text] = plan
        return text

    async def reserve(self, ask: Ask, now: float) -> Decision:
        """One transaction: read the plan(s) and recent starts, decide by the one rule, record a granted start."""

        def work(conn: sqlite3.Connection) -> Decision:
            own = self._plan(conn, ask.own, ask.init)
            assert own is not None
            shared = self._plan(conn, ask.shared, None) if ask.shared is not None else None
            ruling = own if own.trusted(now) else ask.init  # the plan the rule will read (``decide``)
            own_starts = recent_starts(conn, ask.own, now, ruling.pinned(ask.pinned).in_force(now), ask)
            shared_limits = shared.in_force(now) if shared is not None and shared.trusted(now) else None
            shared_starts = recent_starts(conn, ask.shared, now, shared_limits, ask) if ask.shared is not None else []
            decision = decide(ask, own, own_starts, now, shared=shared, shared_starts=shared_starts)
            if decision.dropped:  # the limiter logs it; status names it
                self.dropped.note("rate-limit plan", "not a plan any rule makes", logged=True)
            if decision.plan != own:
                self._put(conn, ask.own, decision.plan)
            if decision.granted:
                for name in (ask.own, ask.shared):
                    if name is not None:
                        conn.execute("INSERT INTO starts VALUES (?, ?)", (name, now))
            return decision

        return await self.state.run(work)

    async def retime(self, ask: Ask, at: float, token: str, sent: float, now: float) -> None:
        """Move the start booked at ``at`` to ``sent`` in each of ``ask``'s windows, in one transaction."""

        def work(conn: sqlite3.Connection) -> None:
            for name in (ask.own, ask.shared):
                if name is not None:
                    retime_start(conn, name, at, sent)

        await self.state.run(work)

    async def started(self, ask: Ask, since: float, until: float, now: float) -> int:
        """Starts in the key's window within ``(since, until]`` (one indexed count)."""

        def work(conn: sqlite3.Connection) -> int:
            sql = "SELECT count(*) FROM starts WHERE upstream = ? AND t > ? AND t <= ?"
            return int(conn.execute(sql, (ask.shared or ask.own, since, until)).fetchone()[0])

        return await self.state.run(work)

    def _put(self, conn: sqlite3.Connection, name: str, plan: PlanState) -> None:
        conn.execute("UPDATE plans SET state = ? WHERE upstream = ?", (self._encoded(plan), name))

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Read, change and write the plan in one transaction."""

        def work(conn: sqlite3.Connection) -> PlanState:
            old = self._plan(conn, ask.own, ask.init)
            assert old is not None
            new = change(old)
            if new != old:
                self._put(conn, ask.own, new)
            return new

        return await self.state.run(work)

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """Count one request unless ``cap`` is reached, in one transaction."""

        def work(conn: sqlite3.Connection) -> tuple[bool, int]:
            row = conn.execute("SELECT n, expires FROM counters WHERE name = ?", (counter,)).fetchone()
            live = row is not None and self._month_end(row[1], expires) > now
            n = self._count(row[0]) if live else 0
            if cap is not None and n >= cap:
                return False, n
            if live:  # an update in place: the name's index is not written
                conn.execute("UPDATE counters SET n = ?, expires = ? WHERE name = ?", (n + 1, expires, counter))
            else:  # a new counter (a new month): the spent ones go
                conn.execute("DELETE FROM counters WHERE expires <= ?", (now,))
                conn.execute("INSERT OR REPLACE INTO counters VALUES (?, ?, ?)", (counter, 1, expires))
            return True, n + 1

        return await self.state.run(work)

    def _epoch(self, conn: sqlite3.Connection) -> str:
        self._known_epoch = read_epoch(conn, self._known_epoch, self.dropped)
        return self._known_epoch

    async def epoch(self) -> str:
        """This file's random id (made with its first epoch read): a file made afresh has another."""
        return await self.state.run(self._epoch)

    async def merge_count(self, counter: str, batch: Batch, now: float) -> int:
        """One transaction: add the outage's batch unless its token is recorded; on another epoch, put its base
        back too (``owed``)."""
        marker, restored = MERGED_PREFIX + batch.token, RESTORED_PREFIX + counter

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT n, expires FROM counters WHERE name = ?", (counter,)).fetchone()
            ends = self._month_end(row[1], batch.expires) if row is not None else 0.0
            live = ends > now
            n = self._count(row[0]) if live else 0  # a broken count restarts from 0, as ``book`` reads it
            if conn.execute("SELECT 1 FROM records WHERE key = ?", (marker,)).fetchone() is not None:
                return n
            expires = max(batch.expires, ends if live else 0.0)
            merged = n + batch.delta
            if batch.epoch is not None and batch.epoch != self._epoch(conn):  # the file lost what it held
                put_back = read_put_back(conn, restored, self.dropped)
                if batch.base > put_back:
                    merged += batch.base - put_back
                    conn.execute(
                        "INSERT OR REPLACE INTO records VALUES (?, ?, ?)", (restored, str(batch.base), expires)
                    )
            conn.execute("INSERT OR REPLACE INTO counters VALUES (?, ?, ?)", (counter, max(0, merged), expires))
            conn.execute("DELETE FROM records WHERE key LIKE ? AND expires <= ?", (MERGED_PREFIX + "%", now))
            conn.execute("INSERT INTO records VALUES (?, '{}', ?)", (marker, now + MERGED_KEPT_SECONDS))
            return max(0, merged)

        return await self.state.run(work)

    async def unbook(self, counter: str) -> None:
        """Give one back."""
        await self.state.run(lambda c: c.execute("UPDATE counters SET n = MAX(0, n - 1) WHERE name = ?", (counter,)))

    async def count(self, counter: str, now: float) -> int:
        """Requests counted (0 once expired)."""

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute("SELECT n FROM counters WHERE name = ? AND expires > ?", (counter, now)).fetchone()
            return 0 if row is None else self._count(row[0])

        return await self.state.run(work, tx=False)

    def _month_end(self, stored: object, month_end: float) -> float:
        """A stored month end, else (noted) ``month_end``: a damaged one neither resets the cap nor raises."""
        if isinstance(stored, int | float) and not isinstance(stored, bool) and math.isfinite(stored):
            return float(stored)
        self.dropped.note("monthly count's month end", f"not a time ({repr(stored)[:40]})")
        return month_end

    def _count(self, stored: object) -> int:
        """A stored monthly count, or 0 (one warning; status names it) when it is not a whole number a month can
        reach: it must neither close the spending cap for the month nor fail the outage's counts (``merge_count``)."""
        if isinstance(stored, int) and not isinstance(stored, bool) and 0 <= stored <= MAX_MONTH_REQUESTS:
            return stored
        self._warnings.warn(
            "counter", "A monthly request count in %s was unreadable (%s); it restarts from 0.", self.state.path,
            repr(stored)[:60],
        )  # fmt: skip
        self.dropped.note("monthly request count", "not a count a month can reach", logged=True)
        return 0

    async def cache_get_or_lease(self, key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
        """One transaction: a live value (its use time refreshed for LRU), else the lease if nobody holds it or its
        holder let it expire (a dead process)."""

        def work(conn: sqlite3.Connection) -> tuple[bytes | None, bool]:
            row = conn.execute("SELECT rowid, value, expires FROM cache WHERE key = ?", (key,)).fetchone()
            if row is not None and row[2] > now:
                conn.execute("UPDATE cache SET used = ? WHERE rowid = ?", (now, row[0]))
                return bytes(row[1]), False
            held = conn.execute("SELECT owner, expires FROM leases WHERE key = ?", (key,)).fetchone()
            if held is not None and held[1] > now and held[0] != owner:
                return None, False
            conn.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (key, owner, until))
            return None, True

        return await self.cache.run(work)

    async def cache_renew(self, key: str, owner: str, now: float, until: float) -> bool:
        """Move the lease's expiry to ``until`` if ``owner`` still holds it."""

        def work(conn: sqlite3.Connection) -> bool:
            sql = "UPDATE leases SET expires = ? WHERE key = ? AND owner = ?"
            return conn.execute(sql, (until, key, owner)).rowcount > 0

        return await self.cache.run(work)

    async def cache_drop(self, key: str) -> None:
        """Delete one value."""
        await self.cache.run(lambda c: c.execute("DELETE FROM cache WHERE key = ?", (key,)))

    async def cache_put_release(self, key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
        """One transaction: store ``value`` (unless None or over the byte bound), drop expired entries and the least
        recently used ones over the bounds, and delete the lease if ``owner`` still holds it."""
        if value is not None and (
            self._max_entries <= 0 or (self._max_bytes is not None and len(value) > self._max_bytes)
        ):
            value = None

        def work(conn: sqlite3.Connection) -> None:
            if value is not None:
                self._store(conn, key, value, expires, now)
            conn.execute("DELETE FROM leases WHERE key = ? AND owner = ?", (key, owner))

        await self.cache.run(work)

    def _store(self, conn: sqlite3.Connection, key: str, value: bytes, expires: float, now: float) -> None:
        """Insert, then evict; each eviction runs only when a count or a sum says it has something to delete."""
        conn.execute("INSERT OR REPLACE INTO cache VALUES (?, ?, ?, ?, ?)", (key, value, expires, len(value), now))
        conn.execute("DELETE FROM cache WHERE expires <= ?", (now,))
        over = int(conn.execute("SELECT count(*) FROM cache").fetchone()[0]) - self._max_entries
        if over > 0:  # the oldest by use; among equal use times the lowest keys, as ``used DESC, key DESC`` keeps
            conn.execute("DELETE FROM cache WHERE key IN (SELECT key FROM cache ORDER BY used, key LIMIT ?)", (over,))
        if (
            self._max_bytes is not None
            and conn.execute("SELECT total(size) FROM cache").fetchone()[0] > self._max_bytes
        ):
            conn.execute(
                "DELETE FROM cache WHERE key IN (SELECT key FROM (SELECT key, SUM(size) OVER "
                "(ORDER BY used DESC, key DESC ROWS UNBOUNDED PRECEDING) AS total FROM cache) WHERE total > ?)",
                (self._max_bytes,),
            )

    async def cache_stats(self, now: float) -> dict[str, Any]:
        """Live entries and their bytes."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            n, size = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM cache WHERE expires > ?", (now,)
            ).fetchone()
            return {"entries": n, "bytes": size, "max": self._max_entries, "max_bytes": self._max_bytes}

        return await self.cache.run(work, tx=False)

    async def cache_clear(self) -> None:
        """Delete every cached value."""
        await self.cache.run(lambda c: c.execute("DELETE FROM cache"), tx=False)

    async def record_get(self, key: str, now: float) -> str | None:
        """A live record's text, or None."""

        def work(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT value, expires FROM records WHERE key = ?", (key,)).fetchone()
            if row is None or (row[1] is not None and row[1] <= now):
                return None
            return row[0] if isinstance(row[0], str) else repr(row[0])  # a number or a blob: its reader drops it

        return await self.state.run(work, tx=False)

    async def record_put(self, key: str, text: str, expires: float | None, now: float) -> None:
        """Store a record."""
        await self.state.run(
            lambda c: c.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?)", (key, text, expires)), tx=False
        )

    async def record_delete(self, key: str) -> None:
        """Delete a record."""
        await self.state.run(lambda c: c.execute("DELETE FROM records WHERE key = ?", (key,)), tx=False)

    async def aclose(self) -> None:
        """Close the files."""

        def close() -> None:
            self.state.close()
            if self.cache is not self.state:
                self.cache.close()

        await anyio.to_thread.run_sync(close)


def _open_files(
    path: Path, cache_path: Path | None, legacy_path: Path | None
) -> tuple[sqlite3.Connection, sqlite3.Connection | None]:
    """The state file, its counters moved from ``legacy_path`` on its first opening, and the cache file (None when
    it cannot be opened now: the cache alone degrades, and its first operation tries again)."""
    state = connect(path, tables=ALL_TABLES if cache_path is None else STATE_TABLES)
    if legacy_path is not None:
        adopt_legacy(state, legacy_path)
    if cache_path is None:
        return state, None
    try:
        return state, connect(cache_path, tables=CACHE_TABLES)
    except (sqlite3.Error, OSError) as exc:
        logger.debug("state: cache file %s not opened now (%s)", cache_path, exc)
        return state, None


async def open_sqlite(
    path: Path, options: StateOptions, *, cache_path: Path | None = None, legacy_path: Path | None = None
) -> StateBackend:
    """Open the state file ``path`` and the cache file ``cache_path`` (None: ``path`` holds the cache too), moving
    what an older version kept at ``legacy_path`` once; if the state file cannot be opened now, log one warning and
    run on memory until it can (tried again every ``options.retry_interval`` seconds)."""
    if cache_path == path:
        cache_path = None
    if legacy_path in (path, cache_path):
        legacy_path = None
    down = None
    try:
        conn, cache_conn = await anyio.to_thread.run_sync(_open_files, path, cache_path, legacy_path)
    except Exception as exc:  # unopenable now (read-only, a file where its directory should be...): tried again later
        down = f"state file {path} unusable ({type(exc).__name__}: {exc})"
        conn, cache_conn = None, None
    state = FileConnection(path, conn, tables=ALL_TABLES if cache_path is None else STATE_TABLES, counts=True)
    cache = None if cache_path is None else FileConnection(cache_path, cache_conn, tables=CACHE_TABLES)
    store = SqliteStore(state, cache, max_entries=options.cache_max_entries, max_bytes=options.cache_max_bytes)
    heartbeat = SqliteHeartbeat(state)
    return SharedBackend("sqlite", store, options, down=down, journal=Journal(path), heartbeat=heartbeat)
