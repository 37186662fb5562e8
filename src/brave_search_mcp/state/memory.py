"""Per-process state: today's Throttle and ResponseCache behind the shared interface (and the others' fallback)."""

from __future__ import annotations

import math
from typing import Any

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.ratelimit.limiter import Limiter, SlotUnavailable
from brave_search_mcp.ratelimit.plan import PlanState
from brave_search_mcp.ratelimit.throttle import Throttle
from brave_search_mcp.state.base import Fetch, RecordStore, SharedCache
from brave_search_mcp.state.response_cache import ResponseCache


class MemoryLimiter:
    """The in-process FIFO throttle, driven by the shared ``PlanState`` rules so every backend adapts alike."""

    def __init__(self, upstream: str, rate: float, burst: int, *, clock: Clock, sleep: Sleep) -> None:
        self._upstream = upstream
        self._clock = clock
        self._plan = PlanState.initial(rate, burst)
        self._throttle = Throttle(rate, burst, clock=clock, sleep=sleep)

    def _apply(self) -> None:
        """Bring the throttle to the rate in force now (recovery after a penalty is a function of time)."""
        rate, burst = self._plan.in_force(self._clock())
        if rate != self._throttle.rate or burst != self._throttle.burst:
            self._throttle.update(rate, burst)
        self._throttle.block_until(self._plan.blocked_until)

    async def acquire(self, *, deadline: float | None = None) -> float:
        """Queue in arrival order; SlotUnavailable at once when the earliest start is after ``deadline``."""
        self._apply()
        if deadline is not None:
            start = self._throttle.earliest_start()
            if start > deadline:
                raise SlotUnavailable(start - self._clock(), self._upstream)
        return await self._throttle.acquire()

    async def update(self, rate: float, burst: int) -> None:
        """The plan learned from headers."""
        self._plan = self._plan.learned(rate, burst, self._clock())
        self._apply()

    async def penalize(self) -> None:
        """Halve the rate in force (once per window)."""
        self._plan = self._plan.penalized(self._clock())
        self._apply()

    async def block_until(self, t: float) -> None:
        """No start before ``t``."""
        self._plan = self._plan.blocked(t)
        self._apply()

    async def snapshot(self) -> dict[str, Any]:
        """Rate in force, plan, pause; plus how many callers queue here."""
        return {**self._plan.snapshot(self._clock(), "memory"), "waiting": self._throttle.waiting}


class MemoryCache:
    """ResponseCache of bytes: TTL+LRU bounded by entries, single-flight within this process."""

    def __init__(self, max_entries: int, *, clock: Clock) -> None:
        # The default TTL is unused: every call passes its own.
        self._cache: ResponseCache[bytes] = ResponseCache(max_entries, math.inf, clock=clock)

    async def get_or_fetch(self, key: str, fetch: Fetch, ttl: float) -> tuple[bytes, bool]:
        """Return ``(value, hit)``; concurrent twins in this process fetch once."""
        value, hit, _shared = await self._cache.get_or_fetch(key, fetch, ttl=ttl)
        return value, hit

    async def stats(self) -> dict[str, Any]:
        """Counters of this process."""
        c = self._cache.stats()
        return {"hits": c.hits, "misses": c.misses, "shared": c.shared, "entries": c.entries, "max": c.max_entries}

    async def clear(self) -> None:
        """Forget every stored answer."""
        self._cache.clear()


class MemoryRecords:
    """A dict of JSON records with optional expiry."""

    def __init__(self, *, clock: Clock) -> None:
        self._clock = clock
        self._items: dict[str, tuple[dict[str, Any], float]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record, or None when absent or expired."""
        item = self._items.get(key)
        if item is None or item[1] <= self._clock():
            self._items.pop(key, None)
            return None
        return dict(item[0])

    async def put(self, key: str, value: dict[str, Any], ttl: float | None = None) -> None:
        """Store a copy of ``value``."""
        expires = math.inf if ttl is None else self._clock() + ttl
        self._items[key] = (dict(value), expires)


class MemoryBackend:
    """State of this process only: what every server had before issue 14, and the shared backends' fallback."""

    name = "memory"

    def __init__(self, *, clock: Clock, sleep: Sleep, cache_max_entries: int, reason: str | None = None) -> None:
        self._clock = clock
        self._sleep = sleep
        self._limiters: dict[str, MemoryLimiter] = {}
        self._reason = reason
        self.cache: SharedCache = MemoryCache(cache_max_entries, clock=clock)
        self.records: RecordStore = MemoryRecords(clock=clock)

    def limiter(self, upstream: str, *, rate: float, burst: int) -> Limiter:
        """One limiter per upstream name, created on first use."""
        found = self._limiters.get(upstream)
        if found is None:
            found = self._limiters[upstream] = MemoryLimiter(
                upstream, rate, burst, clock=self._clock, sleep=self._sleep
            )
        return found

    def health(self) -> dict[str, Any]:
        """Memory is always healthy; degraded only when it stands in for a shared store that failed to open."""
        out: dict[str, Any] = {"backend": "memory", "location": "process", "degraded": self._reason is not None}
        if self._reason is not None:
            out["warning"] = self._reason
        return out

    async def aclose(self) -> None:
        """Nothing to release."""
