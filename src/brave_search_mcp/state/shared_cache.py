"""The response cache in a shared store, with single flight across processes: one lease holder fetches, the others
wait until the value is there: told by the store itself where it can (Redis wakes them the moment the owner stores
the answer: ``FlightWaits.cache_wait``), polling it with a short back-off where it cannot (SQLite on one host).

A value read back that its reader refuses (``check``: a damaged entry, one an older version wrote) is dropped and
fetched again, never handed on. A fetch that outlives a lease keeps it: the holder renews it every third of its
length while the fetch runs, so a slow upstream is asked once. While the store is down the per-process memory
cache answers (``guard``); what it fetched meanwhile is stored once the store is back (a Redis restarted empty, or
the other replicas, would else fetch it again).
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio

from brave_search_mcp.state.base import (
    CacheCounts,
    Check,
    DropLog,
    Fetch,
    SharedCache,
    StateOptions,
    StoreUnavailable,
)
from brave_search_mcp.state.guard import Guard
from brave_search_mcp.state.later import Later
from brave_search_mcp.state.response_cache import ResponseCache

T = TypeVar("T")

MAX_POLLS = 100_000  # bound on any wait loop
MAX_LEASE_POLL_SECONDS = 0.1
WAIT_SECONDS = 0.25  # one wait for another process's flight, when the store can tell when it ends; then look again
MAX_RENEWALS = 10_000  # bound on a lease's renewals (a fetch is bounded by its call's deadline long before)
MAX_UNSTORED = 256  # answers fetched on memory during an outage, kept to be stored when it ends (the newest)...
MAX_UNSTORED_BYTES = 8 * 1024 * 1024  # ...and at most this many bytes of them (answers are kept as stored: gzip)


class CacheStore(Protocol):
    """The cache half of a shared store; every method raises StoreUnavailable when the store fails."""

    def cache_location(self) -> str:
        """Where the cached values live."""
        ...

    async def cache_get_or_lease(self, key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
        """``(value, False)`` for a live value; else ``(None, True)`` when this took the single-flight lease of
        ``key`` until ``until`` (it was free or expired), ``(None, False)`` while another holds it (atomic)."""
        ...

    async def cache_renew(self, key: str, owner: str, now: float, until: float) -> bool:
        """Hold the lease of ``key`` until ``until`` if ``owner`` still holds it; whether it did."""
        ...

    async def cache_put_release(self, key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
        """Store ``value`` (None: nothing) until ``expires``, evicting least recently used entries over the bounds,
        and give the lease back if ``owner`` still holds it (atomic: a follower's next look finds the value)."""
        ...

    async def cache_drop(self, key: str) -> None:
        """Delete the value of ``key`` (its reader refused it)."""
        ...

    async def cache_stats(self, now: float) -> dict[str, Any]:
        """Entries (and bytes where known) stored now."""
        ...

    async def cache_clear(self) -> None:
        """Delete every cached value."""
        ...


@runtime_checkable
class FlightWaits(Protocol):
    """A store that can tell a waiter when another process's flight ended (Redis); the others are polled."""

    async def cache_wait(self, key: str, seconds: float) -> None:
        """Return once the flight leasing ``key`` has stored its answer (or gave the lease back), or after
        ``seconds``: the caller then looks again."""
        ...


def _usable(check: Check | None, value: bytes) -> bool:
    if check is None:
        return True
    try:
        return check(value)
    except Exception:  # a reader that cannot read the value refuses it
        return False


class SharedStoreCache:
    """Cache in the store with single-flight across processes: one lease holder fetches, the others wait for it."""

    def __init__(
        self,
        store: CacheStore,
        guard: Guard,
        fallback: SharedCache,
        later: Later,
        options: StateOptions,
        *,
        dropped: DropLog,
    ) -> None:
        self._store, self._guard, self._fallback, self._later = store, guard, fallback, later
        self._clock, self._sleep, self._lease = options.clock, options.sleep, options.lease_seconds
        self._dropped = dropped
        # storing disabled: only its in-process single-flight is used, so twins in this process poll once
        self._local: ResponseCache[tuple[bytes, bool]] = ResponseCache(0, 0, clock=options.clock)
        self.hits = self.misses = self.shared = 0
        self._owner = uuid.uuid4().hex  # this process's lease owners: this, then a serial number
        self._flights = itertools.count()
        self.wait_seconds = WAIT_SECONDS
        self.polls = 0  # sleeps while another process's flight ran (the store could not tell when it ends)
        self._unstored: dict[str, tuple[bytes, float]] = {}  # fetched on memory during an outage: value, expiry
        self._storing = False  # they are being stored

    async def get_or_fetch(self, key: str, fetch: Fetch, ttl: float, check: Check | None = None) -> tuple[bytes, bool]:
        """Return ``(value, hit)``; a hit includes a value another process fetched while this one waited."""
        (value, hit), _, shared = await self._local.get_or_fetch(
            key, lambda: self._shared_fetch(key, fetch, ttl, check)
        )
        if self._unstored and not self._storing and not self._guard.degraded:  # the store is back
            self._storing = True
            await self._later.run(self._store_unstored)
        if shared:
            self.shared += 1
            return value, True
        return value, hit

    async def _shared_fetch(self, key: str, fetch: Fetch, ttl: float, check: Check | None) -> tuple[bytes, bool]:
        owner = f"{self._owner}-{next(self._flights)}"
        delay = 0.005
        try:
            for _ in range(MAX_POLLS):
                now = self._clock()
                until = now + self._lease
                found, leased = await self._guard.call(
                    lambda: self._store.cache_get_or_lease(key, owner, now, until)  # noqa: B023
                )
                if found is not None:
                    if _usable(check, found):
                        self.hits += 1
                        return found, True
                    self._dropped.note("cached answer", "its reader could not read it")
                    await self._guard.call(lambda: self._store.cache_drop(key))
                    continue  # the next look takes the lease
                if leased:
                    break
                if isinstance(self._store, FlightWaits):
                    waits = self._store
                    await self._guard.call(lambda: waits.cache_wait(key, self.wait_seconds))  # noqa: B023
                    continue
                self.polls += 1
                await self._sleep(delay)
                delay = min(delay * 1.5, MAX_LEASE_POLL_SECONDS)
        except StoreUnavailable:
            value, hit = await self._fallback.get_or_fetch(key, fetch, ttl)
            if not hit and ttl > 0:
                self._keep_unstored(key, value, self._clock() + ttl)
            return value, hit
        self.misses += 1
        kept: bytes | None = None  # a failed fetch stores nothing; the lease goes either way
        try:
            async with anyio.create_task_group() as renewing:  # the lease is held while the fetch runs, no longer
                renewing.start_soon(self._renew, key, owner)
                try:
                    value, failed = await fetch(), None
                except Exception as exc:  # raised below, outside the task group (which would wrap it)
                    value, failed = b"", exc
                renewing.cancel_scope.cancel()
            if failed is not None:
                raise failed
            if ttl > 0:
                kept = value
        finally:  # stored (or the lease given back, after a failure) at once, beside the reply: ``state.later``
            now = self._clock()
            await self._later.run(
                lambda: self._quietly(lambda: self._store.cache_put_release(key, owner, kept, now + ttl, now))
            )
        return value, False

    def _keep_unstored(self, key: str, value: bytes, expires: float) -> None:
        """Keep an answer fetched on memory for the store's return: the newest, within both bounds."""
        self._unstored.pop(key, None)
        self._unstored[key] = (value, expires)
        size = sum(len(kept) for kept, _ in self._unstored.values())
        while len(self._unstored) > MAX_UNSTORED or size > MAX_UNSTORED_BYTES:
            oldest = next(iter(self._unstored))
            size -= len(self._unstored.pop(oldest)[0])

    async def _store_unstored(self) -> None:
        """Store what was fetched on memory during an outage (the live ones), now that the store answers; a failure
        keeps the rest for the next time."""
        owner = f"{self._owner}-{next(self._flights)}"  # holds no lease: a flight under way keeps its own
        try:
            for _ in range(MAX_UNSTORED + 1):  # bounded: what an outage adds meanwhile waits for the next call
                if not self._unstored:
                    return
                key, (value, expires) = next(iter(self._unstored.items()))
                now = self._clock()
                if expires > now:
                    await self._guard.call(lambda: self._store.cache_put_release(key, owner, value, expires, now))  # noqa: B023
                if self._unstored.get(key, (b"", 0.0))[0] is value:
                    del self._unstored[key]
        except StoreUnavailable:
            return
        finally:
            self._storing = False

    async def _renew(self, key: str, owner: str) -> None:
        """While the fetch runs, hold its lease: every third of the lease, until the fetch ends (cancelled then)."""
        for _ in range(MAX_RENEWALS):
            await self._sleep(self._lease / 3)
            now = self._clock()
            try:
                held = await self._guard.call(
                    lambda: self._store.cache_renew(key, owner, now, now + self._lease)  # noqa: B023
                )
            except StoreUnavailable:
                continue  # tried again at the next third (the lease may outlast a short outage)
            if not held:
                return  # taken over (this process stalled past the lease): the new holder fetches

    async def _quietly(self, op: Callable[[], Awaitable[None]]) -> None:
        with contextlib.suppress(StoreUnavailable):
            await self._guard.call(op)

    async def stats(self) -> dict[str, Any]:
        """This process's counters plus what the store holds (the memory standing in for it, while it is down)."""
        counts = self.counts()
        out: dict[str, Any] = {"hits": counts.hits, "misses": counts.misses, "shared": counts.joins}
        try:
            held = await self._guard.call(lambda: self._store.cache_stats(self._clock()))
        except StoreUnavailable:
            held = await self._fallback.stats()
        return out | {name: value for name, value in held.items() if name not in out}

    def counts(self) -> CacheCounts:
        """Look-ups through the store plus those its memory answered while the store was down: both only grow, so
        an outage never lowers the sum a scrape reports."""
        spare = self._fallback.counts()
        return CacheCounts(self.hits + spare.hits, self.misses + spare.misses, self.shared + spare.joins)

    async def clear(self) -> None:
        """Forget every stored answer (for every process)."""
        self._unstored.clear()
        await self._fallback.clear()
        await self._quietly(self._store.cache_clear)
