"""Limiter, cache and records over any shared store, with the per-process fallback written once.

SQLite and Redis differ only in how they store a plan, reserve a start, count a month, keep a value and
take a lease (the ``Store`` protocol). Single-flight polling and the switch to memory when the store
fails (and back when it heals) live here; queueing and the rules live in ``ratelimit``, so both
backends behave the same.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from brave_search_mcp.clock import Clock
from brave_search_mcp.ratelimit.limiter import SlotNumbers, SlotStore
from brave_search_mcp.ratelimit.plan import Ask, Decision, PlanState
from brave_search_mcp.state.base import (
    LEASE_SECONDS,
    Fetch,
    LimiterFactory,
    RecordStore,
    SharedCache,
    StateOptions,
    StoreUnavailable,
)
from brave_search_mcp.state.later import Later
from brave_search_mcp.state.memory import MemoryBackend
from brave_search_mcp.state.response_cache import ResponseCache

logger = logging.getLogger(__name__)
T = TypeVar("T")

MAX_POLLS = 100_000  # bound on any wait loop
MAX_LEASE_POLL_SECONDS = 0.1


class Store(SlotNumbers, Protocol):
    """What a shared backend must do atomically; every method raises StoreUnavailable when the store fails."""

    def location(self) -> str:
        """Where the state lives, without secrets."""
        ...

    def cache_location(self) -> str:
        """Where the cached values live (the same as ``location`` when one place holds both)."""
        ...

    async def cache_get_or_lease(self, key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
        """``(value, False)`` for a live value; else ``(None, True)`` when this took the single-flight lease of
        ``key`` until ``until`` (it was free or expired), ``(None, False)`` while another holds it (atomic)."""
        ...

    async def cache_put_release(self, key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
        """Store ``value`` (None: nothing) until ``expires``, evicting least recently used entries over the bounds,
        and give the lease back if ``owner`` still holds it (atomic: a follower's next look finds the value)."""
        ...

    async def cache_stats(self, now: float) -> dict[str, Any]:
        """Entries (and bytes where known) stored now."""
        ...

    async def cache_clear(self) -> None:
        """Delete every cached value."""
        ...

    async def record_get(self, key: str, now: float) -> dict[str, Any] | None:
        """A live record, or None."""
        ...

    async def record_put(self, key: str, value: dict[str, Any], expires: float | None, now: float) -> None:
        """Store a record."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class Guard:
    """Tracks whether the store works; after a failure, callers use memory until the retry time, then try again."""

    def __init__(self, name: str, *, clock: Clock, retry_interval: float) -> None:
        self._name = name  # what fails and comes back: "sqlite state", "sqlite cache"
        self._clock = clock
        self._retry_interval = retry_interval
        self._retry_at = float("-inf")
        self.warning: str | None = None

    @property
    def degraded(self) -> bool:
        """True while the store is considered down."""
        return self.warning is not None

    async def call(self, op: Callable[[], Awaitable[T]]) -> T:
        """Run ``op`` on the store; StoreUnavailable (at once while cooling down) means: use memory."""
        if self.warning is not None and self._clock() < self._retry_at:
            raise StoreUnavailable(self.warning)
        try:
            result = await op()
        except StoreUnavailable as exc:
            self._retry_at = self._clock() + self._retry_interval
            if self.warning is None:
                self.warning = f"{self._name} unavailable ({exc}); using per-process memory until it returns"
                logger.warning("%s", self.warning)
            raise
        if self.warning is not None:
            logger.info("%s is back; shared again", self._name)
            self.warning = None
        return result


class SharedSlots:
    """The store's rate-limit numbers, or this process's memory while the store is down (and back when it heals)."""

    shared = True

    def __init__(self, backend: SharedBackend) -> None:
        self._b = backend
        self.name = backend.name
        self._fallback = backend.fallback.slots

    @property
    def degraded(self) -> bool:
        """True while the store is down (calls run on this process's memory)."""
        return self._b.guard.degraded

    async def _either(self, on_store: Callable[[], Awaitable[T]], in_memory: Callable[[], Awaitable[T]]) -> T:
        try:
            return await self._b.guard.call(on_store)
        except StoreUnavailable:
            return await in_memory()

    async def reserve(self, ask: Ask, now: float) -> Decision:
        """The store's decision; memory's while the store is down."""
        return await self._either(lambda: self._b.store.reserve(ask, now), lambda: self._fallback.reserve(ask, now))

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Change the stored plan (and memory's, so an outage still knows it)."""
        local = await self._fallback.modify(ask, change)
        return await self._either(lambda: self._b.store.modify(ask, change), lambda: _ready(local))

    async def modify_later(self, ask: Ask, change: Callable[[PlanState], PlanState], done: Callable[[], None]) -> None:
        """Memory's plan now, the store's after the reply (``state.later``); then ``done``."""
        await self._fallback.modify(ask, change)

        async def store() -> None:
            await self._either(lambda: self._b.store.modify(ask, change), lambda: _ready(None))
            done()

        self._b.later.run(store)

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """Count in the store; in memory while it is down (the cap then holds per process)."""
        return await self._either(
            lambda: self._b.store.book(counter, cap, expires, now),
            lambda: self._fallback.book(counter, cap, expires, now),
        )

    async def unbook(self, counter: str) -> None:
        """Give one back in the store (memory while it is down)."""
        await self._either(lambda: self._b.store.unbook(counter), lambda: self._fallback.unbook(counter))

    async def count(self, counter: str, now: float) -> int:
        """The store's count (memory's while it is down)."""
        return await self._either(lambda: self._b.store.count(counter, now), lambda: self._fallback.count(counter, now))


async def _ready(value: T) -> T:
    return value


class SharedStoreCache:
    """Cache in the store with single-flight across processes: one lease holder fetches, the others poll."""

    def __init__(self, backend: SharedBackend) -> None:
        self._b = backend
        # storing disabled: only its in-process single-flight is used, so twins in this process poll once
        self._local: ResponseCache[tuple[bytes, bool]] = ResponseCache(0, 0, clock=backend.clock)
        self.hits = self.misses = self.shared = 0
        self._owner = uuid.uuid4().hex  # this process's lease owners: this, then a serial number
        self._flights = itertools.count()

    async def get_or_fetch(self, key: str, fetch: Fetch, ttl: float) -> tuple[bytes, bool]:
        """Return ``(value, hit)``; a hit includes a value another process fetched while this one waited."""
        (value, hit), _, shared = await self._local.get_or_fetch(key, lambda: self._shared_fetch(key, fetch, ttl))
        if shared:
            self.shared += 1
            return value, True
        return value, hit

    async def _shared_fetch(self, key: str, fetch: Fetch, ttl: float) -> tuple[bytes, bool]:
        b = self._b
        owner = f"{self._owner}-{next(self._flights)}"
        delay = 0.005
        try:
            for _ in range(MAX_POLLS):
                now = b.clock()
                until = now + b.lease_seconds
                found, leased = await b.cache_guard.call(
                    lambda: b.store.cache_get_or_lease(key, owner, now, until)  # noqa: B023
                )
                if found is not None:
                    self.hits += 1
                    return found, True
                if leased:
                    break
                await b.sleep(delay)
                delay = min(delay * 1.5, MAX_LEASE_POLL_SECONDS)
        except StoreUnavailable:
            return await b.fallback.cache.get_or_fetch(key, fetch, ttl)
        self.misses += 1
        kept: bytes | None = None  # a failed fetch stores nothing; the lease goes either way
        try:
            value = await fetch()
            if ttl > 0:
                kept = value
        finally:  # stored (or the lease given back, after a failure) once the reply is out: ``state.later``
            now = b.clock()
            b.later.run(lambda: self._quietly(lambda: b.store.cache_put_release(key, owner, kept, now + ttl, now)))
        return value, False

    async def _quietly(self, op: Callable[[], Awaitable[None]]) -> None:
        with contextlib.suppress(StoreUnavailable):
            await self._b.cache_guard.call(op)

    async def stats(self) -> dict[str, Any]:
        """This process's counters plus what the store holds."""
        b = self._b
        out: dict[str, Any] = {"hits": self.hits, "misses": self.misses, "shared": self.shared}
        try:
            out.update(await b.cache_guard.call(lambda: b.store.cache_stats(b.clock())))
        except StoreUnavailable:
            out.update(await b.fallback.cache.stats())
        return out

    async def clear(self) -> None:
        """Forget every stored answer (for every process)."""
        await self._b.fallback.cache.clear()
        await self._quietly(self._b.store.cache_clear)


class SharedRecords:
    """JSON records in the store (memory while it is down)."""

    def __init__(self, backend: SharedBackend) -> None:
        self._b = backend

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record, or None."""
        b = self._b
        try:
            return await b.guard.call(lambda: b.store.record_get(key, b.clock()))
        except StoreUnavailable:
            return await b.fallback.records.get(key)

    async def put(self, key: str, value: dict[str, Any], ttl: float | None = None) -> None:
        """Store the record (in memory too, so a later outage still sees it)."""
        b = self._b
        await b.fallback.records.put(key, value, ttl)
        now = b.clock()
        expires = None if ttl is None else now + ttl
        with contextlib.suppress(StoreUnavailable):
            await b.guard.call(lambda: b.store.record_put(key, value, expires, now))


class SharedBackend(LimiterFactory):
    """A StateBackend over a Store: shared limiter numbers, cache and records, degrading to memory on failure."""

    def __init__(self, name: str, store: Store, options: StateOptions) -> None:
        if not 0 < options.lease_seconds <= LEASE_SECONDS:
            raise ValueError(f"lease_seconds must be in (0, {LEASE_SECONDS}], got {options.lease_seconds!r}")
        super().__init__(clock=options.clock, sleep=options.sleep)
        self.name = name
        self.store = store
        self.lease_seconds = options.lease_seconds
        self.guard = Guard(f"{name} state", clock=options.clock, retry_interval=options.retry_interval)
        # a cache of its own fails and heals on its own (the counters stay shared while it is gone)
        separate = store.cache_location() != store.location()
        cache_guard = Guard(f"{name} cache", clock=options.clock, retry_interval=options.retry_interval)
        self.cache_guard = cache_guard if separate else self.guard
        self.fallback = MemoryBackend(
            clock=options.clock, sleep=options.sleep, cache_max_entries=options.cache_max_entries
        )
        self.slots: SlotStore = SharedSlots(self)
        self.cache: SharedCache = SharedStoreCache(self)
        self.records: RecordStore = SharedRecords(self)
        self.later = Later()  # the cache's writes that wait until the reply is out

    def health(self) -> dict[str, Any]:
        """Backend, where the state and the cache live, and whether calls currently run on the per-process fallback."""
        out: dict[str, Any] = {
            "backend": self.name,
            "location": self.store.location(),
            "cache_location": self.store.cache_location(),
            "degraded": self.guard.degraded or self.cache_guard.degraded,
        }
        warnings = dict.fromkeys(w for w in (self.guard.warning, self.cache_guard.warning) if w is not None)
        if warnings:
            out["warning"] = "; ".join(warnings)
        return out

    async def settle(self) -> None:
        """Wait for the writes deferred until after a reply."""
        await self.later.settle()

    def busy(self) -> AbstractContextManager[None]:
        """One tool call in flight: deferred writes wait for it (``Later.busy``)."""
        return self.later.busy()

    async def aclose(self) -> None:
        """Finish the deferred writes, then close the store."""
        await self.later.settle()
        await self.store.aclose()
