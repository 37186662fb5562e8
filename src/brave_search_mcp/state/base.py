"""The one state interface (limiter, cache, records) that memory, SQLite and Redis implement alike.

Callers never learn which backend they hold: a stdio server, the CLI and the library of one user share
a SQLite file by default, replicas share Redis, and a broken shared store degrades to per-process
memory instead of failing calls. Rate limiting's rules live once in ``ratelimit`` (``plan.decide`` and the
``Limiter`` queue); a backend only stores their numbers (``SlotStore``: plans, recent starts, monthly
counters), so every backend learns, backs off and counts alike.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cachetools import LRUCache

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.ratelimit.limiter import Limiter, SlotStore
from brave_search_mcp.ratelimit.plan import Ask, PlanState, check_limits

logger = logging.getLogger(__name__)

Fetch = Callable[[], Awaitable[bytes]]
Check = Callable[[bytes], bool]  # whether a value read back from a store can be used (False: drop it, fetch again)

LEASE_SECONDS = 30.0  # a single-flight lease whose holder died frees itself after this long
RETRY_INTERVAL_SECONDS = 5.0  # after a store failure, memory is used this long before the store is tried again
DROP_NOTICE_SECONDS = 3600.0  # the status tool names a dropped record this long after the last one


@dataclass(frozen=True)
class StateOptions:
    """How a backend is tuned, named once and handed from ``open_state`` down to whichever backend it opens."""

    cache_max_entries: int
    clock: Clock
    sleep: Sleep
    cache_max_bytes: int | None = None
    lease_seconds: float = LEASE_SECONDS
    retry_interval: float = RETRY_INTERVAL_SECONDS


class StoreUnavailable(Exception):
    """The shared store (SQLite file or Redis) failed; the caller switches to per-process memory."""


class DropLog:
    """Stored values that failed validation and were dropped (each one rebuilt from what this process knows): one
    warning line each, and the status tool names the latest for ``DROP_NOTICE_SECONDS``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.count = 0
        self._last: str | None = None
        self._at = -math.inf

    def note(self, what: str, why: str, *, logged: bool = False) -> None:
        """One stored ``what`` was dropped because of ``why`` (neither may hold a secret or a query); ``logged``: its
        warning line was written already (the rate limiter says so itself)."""
        self.count += 1
        self._last, self._at = f"{what} ({why})", self._clock()
        if not logged:
            logger.warning("state: a stored %s failed validation and was dropped (%s); it is rebuilt", what, why)

    def snapshot(self) -> dict[str, Any] | None:
        """How many were dropped and the latest, while it is recent; None otherwise."""
        if self._last is None or self._clock() - self._at > DROP_NOTICE_SECONDS:
            return None
        return {"count": self.count, "last": self._last, "seconds_ago": round(self._clock() - self._at)}


@dataclass(frozen=True)
class CacheCounts:
    """A cache's look-ups since the process started, kept apart from what a store holds so they only ever grow."""

    hits: int
    misses: int
    joins: int  # look-ups that joined an identical fetch in flight (single flight) instead of sending their own


@runtime_checkable
class SharedCache(Protocol):
    """TTL cache of upstream bodies with single-flight across every process on the backend."""

    async def get_or_fetch(self, key: str, fetch: Fetch, ttl: float, check: Check | None = None) -> tuple[bytes, bool]:
        """Return ``(value, hit)``; identical concurrent requests anywhere on the backend fetch once. A value read
        back from a shared store that ``check`` refuses (or raises on) is dropped and fetched again."""
        ...

    async def stats(self) -> dict[str, Any]:
        """Hits, misses, shared and entries for the status tool."""
        ...

    def counts(self) -> CacheCounts:
        """This process's look-ups, read without I/O: a scrape needs them even while the store is down, and a
        Prometheus counter must never go back (an outage's look-ups, served from memory, are added, not swapped)."""
        ...

    async def clear(self) -> None:
        """Forget every stored answer."""
        ...


@runtime_checkable
class RecordStore(Protocol):
    """Small JSON records (circuit-breaker state per provider) shared on the backend."""

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record, or None when absent or expired."""
        ...

    async def put(self, key: str, value: dict[str, Any], ttl: float | None = None) -> None:
        """Store ``value`` (expires after ``ttl`` seconds when given)."""
        ...

    async def drop(self, key: str, why: str) -> None:
        """The record failed its reader's validation: delete it (the reader rebuilds it) and say so in status."""
        ...


@runtime_checkable
class StateBackend(Protocol):
    """One opened state location: the rate limiter's numbers and queues, the cache, the records, its health."""

    name: str
    slots: SlotStore
    cache: SharedCache
    records: RecordStore

    def limiter(
        self,
        upstream: str,
        *,
        rate: float | None,
        burst: int = 1,
        label: str | None = None,
        local: bool = False,
        **ask: Any,
    ) -> Limiter:
        """The queue of ``upstream``'s family (one per process); see ``LimiterFactory.limiter``."""
        ...

    def health(self) -> dict[str, Any]:
        """Backend, location (no secrets), degraded flag and warning, records dropped lately, for the status tool."""
        ...

    async def settle(self) -> None:
        """Wait for the writes started beside a reply (``state.later``): the store then holds every answer."""
        ...

    def owned(self) -> AbstractAsyncContextManager[None]:
        """While this lasts, writes beside a reply run in a task group its owner's lifespan holds (``state.later``);
        on exit they finish first."""
        ...

    async def aclose(self) -> None:
        """Release connections and files."""
        ...


# Upstreams (Brave families, SearXNG, one per host read_url visits) whose queues and numbers a process keeps.
MAX_UPSTREAMS = 4096


class LimiterFactory:
    """One ``Limiter`` per upstream family and process, over the backend's ``slots``."""

    slots: SlotStore
    local_slots: SlotStore  # this process's numbers alone, bounded (``local`` limiters)

    def __init__(self, *, clock: Clock, sleep: Sleep) -> None:
        self.clock = clock
        self.sleep = sleep
        self._limiters: LRUCache[str, Limiter] = LRUCache(MAX_UPSTREAMS)  # per read host too: bounded

    def limiter(
        self,
        upstream: str,
        *,
        rate: float | None,
        burst: int = 1,
        label: str | None = None,
        local: bool = False,
        **ask: Any,
    ) -> Limiter:
        """The queue of ``upstream``'s family: ``rate``/``burst`` is a known plan (None: learn it, probing first)
        that applies until another is stored; ``ask`` the rest of an ``Ask``: ``family``, ``primary`` (the key's
        one window), ``pinned`` (an explicit setting, which wins over any plan), ``margin``. ``local``: its numbers
        stay in this process's bounded memory, never in the shared store (a fixed politeness rate per host
        ``read_url`` visits: a row per host in a shared file would grow with every site ever read)."""
        if rate is not None:
            check_limits(rate, burst)
        if ask.get("pinned") is not None:
            check_limits(*ask["pinned"])
        init = PlanState.unknown() if rate is None else PlanState.known(rate, burst)
        wanted = Ask(upstream, init=init, **ask)
        found = self._limiters.get(wanted.own)
        if found is None:
            slots = self.local_slots if local else self.slots
            found = Limiter(slots, wanted, clock=self.clock, sleep=self.sleep, label=label or upstream)
            self._limiters[wanted.own] = found
        return found
