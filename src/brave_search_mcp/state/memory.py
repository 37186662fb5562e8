"""Per-process state: the rule set's numbers in dicts and the ResponseCache, behind the shared interface (and the
shared backends' fallback)."""

from __future__ import annotations

import bisect
import contextlib
import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

from cachetools import LRUCache

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.ratelimit.limiter import Limiter, SlotStore
from brave_search_mcp.ratelimit.plan import NEVER, Ask, Decision, PlanState, decide, horizon, keep_after
from brave_search_mcp.state.base import (
    MAX_UPSTREAMS,
    CacheCounts,
    Check,
    DropLog,
    Fetch,
    LimiterFactory,
    RecordStore,
    SharedCache,
)
from brave_search_mcp.state.peers import share, share_limits, unshared
from brave_search_mcp.state.response_cache import ResponseCache


class MemorySlots:
    """Plans, recent starts and monthly counters in dicts: the rule set's numbers for this process alone."""

    name = "memory"
    shared = False
    degraded = False

    def __init__(self, *, clock: Clock, dropped: DropLog | None = None) -> None:
        self._clock = clock
        self.dropped = dropped if dropped is not None else DropLog()
        # Bounded: a long-lived server reading pages meets a new host limiter per site; the least recently used
        # ones are forgotten (a forgotten host restarts at its published politeness rate, a Brave key re-learns).
        self._plans: LRUCache[str, PlanState] = LRUCache(MAX_UPSTREAMS)
        self._starts: LRUCache[str, list[float]] = LRUCache(MAX_UPSTREAMS)
        self._counters: dict[str, tuple[int, float]] = {}

    def _recent(self, name: str, now: float, limits: tuple[float, int] | None, ask: Ask) -> list[float]:
        starts = self._starts.get(name)
        if starts is None:
            starts = self._starts[name] = []
        cut = bisect.bisect_right(starts, keep_after(now, limits, ask.margin))
        del starts[:cut]
        return starts

    async def reserve(self, ask: Ask, now: float, *, peers: int = 1) -> Decision:
        """``plan.decide`` over this process's plans and starts. ``peers``: how many processes decide alone like
        this one (their shared store is down): each is granted its share of the window (``peers.share``); the plans
        kept, and the one returned, stay the full ones."""
        own = self._plans.get(ask.own, ask.init)
        shared = self._plans.get(ask.shared) if ask.shared is not None else None
        view = ask
        if peers > 1:
            pinned = None if ask.pinned is None else share_limits(ask.pinned, peers)
            view = replace(ask, init=share(ask.init, peers), pinned=pinned)
        own_view, shared_view = share(own, peers), None if shared is None else share(shared, peers)
        own_starts = self._recent(ask.own, now, own_view.pinned(view.pinned).in_force(now), ask)
        shared_limits = shared_view.in_force(now) if shared_view is not None else None
        shared_starts = self._recent(ask.shared, now, shared_limits, ask) if ask.shared is not None else []
        decision = decide(view, own_view, own_starts, now, shared=shared_view, shared_starts=shared_starts)
        if peers > 1:
            decision = replace(decision, plan=unshared(decision.plan, ask.init if decision.dropped else own))
        self._plans[ask.own] = decision.plan
        if decision.granted:
            bisect.insort(own_starts, now)
            if ask.shared is not None:
                bisect.insort(shared_starts, now)
        return decision

    async def retime(self, ask: Ask, at: float, token: str, sent: float, now: float) -> None:
        """Move the start booked at ``at`` to ``sent`` in each of ``ask``'s windows (starts go unnamed here)."""
        for name in (ask.own, ask.shared):
            starts = self._starts.get(name) if name is not None else None
            if not starts:
                continue
            found = bisect.bisect_left(starts, at)
            if found < len(starts) and starts[found] == at:
                del starts[found]
                bisect.insort(starts, sent)

    async def started(self, ask: Ask, since: float, until: float, now: float) -> int:
        """Starts recorded here in the key's window within ``(since, until]``."""
        starts = self._starts.get(ask.shared or ask.own) or []
        return bisect.bisect_right(starts, until) - bisect.bisect_right(starts, since)

    def fill(self, ask: Ask, at: float) -> None:
        """Take the windows ``ask`` starts in as full at ``at``: a shared store was lost then, with the starts every
        process made in it (starting a share at once on top of a full window sent Brave more than its plan)."""
        for name, pinned in ((ask.own, ask.pinned), (ask.shared, None)):
            plan = self._plans.get(name) if name is not None else None
            limits = plan.pinned(pinned).in_force(at) if plan is not None else None
            if name is not None and limits is not None:
                starts = self._recent(name, at, limits, ask)
                starts.extend([at] * limits[1])
                starts.sort()

    def window(self, ask: Ask, now: float, peers: int) -> float:
        """How long a start made now stays in the window of ``ask``'s family, at the share of ``peers``."""
        plan = share(self._plans.get(ask.own, ask.init), peers)
        limits = plan.pinned(None if ask.pinned is None else share_limits(ask.pinned, peers)).in_force(now)
        return 0.0 if limits is None else horizon(*limits, ask.margin)

    def note_dropped(self, what: str, why: str) -> None:
        """A plan the limiter refused: status names it (logged already)."""
        self.dropped.note(what, why, logged=True)

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Apply ``change`` to the family's plan."""
        plan = self._plans[ask.own] = change(self._plans.get(ask.own, ask.init))
        return plan

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """Count one request unless ``cap`` is reached."""
        n = await self.count(counter, now)
        if cap is not None and n >= cap:
            return False, n
        self._counters[counter] = (n + 1, expires)
        return True, n + 1

    async def unbook(self, counter: str) -> None:
        """Give one back."""
        n, expires = self._counters.get(counter, (0, math.inf))
        self._counters[counter] = (max(0, n - 1), expires)

    async def count(self, counter: str, now: float) -> int:
        """Requests counted (0 once the counter expired)."""
        n, expires = self._counters.get(counter, (0, math.inf))
        if expires <= now:
            self._counters.pop(counter, None)
            return 0
        return n

    # -- what a shared store last said, kept for an outage ---------------------------------------

    def remember(self, name: str, plan: PlanState) -> None:
        """The store's plan of ``name``: an outage starts from it (a probe out in another process is not this one's
        to wait for)."""
        self._plans[name] = plan if plan.probe_until == NEVER else replace(plan, probe_until=NEVER)

    def plan_of(self, name: str) -> PlanState | None:
        """The plan last remembered or changed here, if any."""
        return self._plans.get(name)

    def counts(self, now: float) -> list[tuple[str, int, float]]:
        """Every live counter: (name, count, expiry)."""
        return [(name, n, expires) for name, (n, expires) in self._counters.items() if expires > now]

    def knows(self, counter: str) -> bool:
        """Whether this process has a count of ``counter`` (from the store, or counted here)."""
        return counter in self._counters

    def add_count(self, counter: str, delta: int) -> None:
        """Requests another process counted (a journal's): added to a count this process has."""
        n, expires = self._counters[counter]
        self._counters[counter] = (max(0, n + delta), expires)

    def remember_count(self, counter: str, n: int, expires: float | None) -> None:
        """A count the store gave: an outage counts on from the highest one seen (answers to calls made together
        arrive in any order; ``expires`` None: as before)."""
        old = self._counters.get(counter)
        if old is None:
            self._counters[counter] = (n, math.inf if expires is None else expires)
        else:
            self._counters[counter] = (max(n, old[0]), old[1] if expires is None else expires)


class MemoryCache:
    """ResponseCache of bytes: TTL+LRU bounded by entries, single-flight within this process."""

    def __init__(self, max_entries: int, *, clock: Clock) -> None:
        # The default TTL is unused: every call passes its own.
        self._cache: ResponseCache[bytes] = ResponseCache(max_entries, math.inf, clock=clock)

    async def get_or_fetch(self, key: str, fetch: Fetch, ttl: float, check: Check | None = None) -> tuple[bytes, bool]:
        """Return ``(value, hit)``; concurrent twins in this process fetch once. ``check`` is not run: every value
        here is one this process fetched and its caller read."""
        value, hit, _shared = await self._cache.get_or_fetch(key, fetch, ttl=ttl)
        return value, hit

    async def stats(self) -> dict[str, Any]:
        """Counters of this process."""
        c = self._cache.stats()
        return {"hits": c.hits, "misses": c.misses, "shared": c.shared, "entries": c.entries, "max": c.max_entries}

    def counts(self) -> CacheCounts:
        """The look-ups of this process (``clear`` forgets entries, never these), so a scrape can count them."""
        c = self._cache.stats()
        return CacheCounts(c.hits, c.misses, c.shared)

    async def clear(self) -> None:
        """Forget every stored answer."""
        self._cache.clear()


class MemoryRecords:
    """A dict of JSON records with optional expiry."""

    def __init__(self, *, clock: Clock, dropped: DropLog | None = None) -> None:
        self._clock = clock
        self._items: dict[str, tuple[dict[str, Any], float]] = {}
        self.dropped = dropped if dropped is not None else DropLog()

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

    async def drop(self, key: str, why: str) -> None:
        """Forget the record its reader refused."""
        self._items.pop(key, None)
        self.dropped.note("record", why)

    async def forget(self, key: str) -> None:
        """Forget the record without a word (a shared store dropped it: this copy goes with it)."""
        self._items.pop(key, None)


class MemoryBackend(LimiterFactory):
    """State of this process only: what every server had before issue 14, and the shared backends' fallback."""

    name = "memory"

    def __init__(self, *, clock: Clock, sleep: Sleep, cache_max_entries: int, reason: str | None = None) -> None:
        super().__init__(clock=clock, sleep=sleep)
        self._reason = reason
        dropped = DropLog()  # one for the plans and the records: the health names the latest
        self.memory_slots = MemorySlots(clock=clock, dropped=dropped)
        self.slots: SlotStore = self.memory_slots
        self.local_slots: SlotStore = self.memory_slots
        self.cache: SharedCache = MemoryCache(cache_max_entries, clock=clock)
        self.memory_records = MemoryRecords(clock=clock, dropped=dropped)
        self.records: RecordStore = self.memory_records

    def health(self) -> dict[str, Any]:
        """Memory is always healthy; degraded only when it stands in for a shared store that failed to open."""
        out: dict[str, Any] = {"backend": "memory", "location": "process", "degraded": self._reason is not None}
        if self._reason is not None:
            out["warning"] = self._reason
        dropped = self.memory_records.dropped.snapshot()
        if dropped is not None:
            out["dropped"] = dropped
        return out

    async def settle(self) -> None:
        """Nothing is deferred here: every write is done when its call returns."""

    def owned(self) -> AbstractAsyncContextManager[None]:
        """Nothing runs beside a reply here."""
        return contextlib.nullcontext()

    async def aclose(self) -> None:
        """Nothing to release."""


def memory_limiter(
    upstream: str, *, rate: float | None, burst: int = 1, clock: Clock, sleep: Sleep, **options: Any
) -> Limiter:
    """A limiter of this process alone (a provider built without the composition root; tests)."""
    return MemoryBackend(clock=clock, sleep=sleep, cache_max_entries=0).limiter(
        upstream, rate=rate, burst=burst, **options
    )
