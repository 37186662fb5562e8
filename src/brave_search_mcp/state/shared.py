"""Limiter numbers and records over any shared store, with the per-process fallback written once.

SQLite and Redis differ only in how they store a plan, reserve a start, count a month, keep a value and
take a lease (the ``Store`` protocol). The switch to memory when the store fails (and back when it heals, ``guard``)
lives here, and what an outage must not lose: memory keeps the plan and the month's count the store last gave, so
calls meanwhile run at this process's share of the learned plan (``peers``) and count on from the store's count,
and the requests counted meanwhile are added to the store once it is back (``owed``), by this process or, when it
ends first, by the next one to reach the store (``journal``, beside a SQLite state file). The cache and its single
flight are ``shared_cache``; queueing and the rules live in ``ratelimit``, so both backends behave the same.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from brave_search_mcp.ratelimit.limiter import SlotNumbers, SlotStore
from brave_search_mcp.ratelimit.plan import KEEP_STARTS_SECONDS, Ask, Decision, PlanState
from brave_search_mcp.state.base import (
    LEASE_SECONDS,
    DropLog,
    LimiterFactory,
    RecordStore,
    SharedCache,
    StateOptions,
    StoreUnavailable,
)
from brave_search_mcp.state.guard import Guard
from brave_search_mcp.state.journal import Journal, Owed
from brave_search_mcp.state.later import Later
from brave_search_mcp.state.memory import MemoryBackend, MemorySlots
from brave_search_mcp.state.owed import Batch, OwedCounts
from brave_search_mcp.state.peers import Heartbeat, Peers
from brave_search_mcp.state.shared_cache import CacheStore, SharedStoreCache

logger = logging.getLogger(__name__)
T = TypeVar("T")

MAX_RECORD_CHARS = 64 * 1024  # a record bigger than this was not written by this project


class Store(SlotNumbers, CacheStore, Protocol):
    """What a shared backend must do atomically; every method raises StoreUnavailable when the store fails."""

    dropped: DropLog  # stored values it read back, failed and dropped

    def location(self) -> str:
        """Where the state lives, without secrets."""
        ...

    async def epoch(self) -> str:
        """This store's random id, made on first use: a store that lost what it held (restarted empty, made afresh)
        has a new one."""
        ...

    async def merge_count(self, counter: str, batch: Batch, now: float) -> int:
        """Add ``batch.delta`` to the counter once per ``batch.token`` (a batch sent again changes nothing); if the
        store's epoch is not ``batch.epoch``, also put back ``batch.base`` where it exceeds the base already put
        back (kept beside the count); the count after it."""
        ...

    async def record_get(self, key: str, now: float) -> str | None:
        """A live record's JSON text, or None."""
        ...

    async def record_put(self, key: str, text: str, expires: float | None, now: float) -> None:
        """Store a record's JSON text."""
        ...

    async def record_delete(self, key: str) -> None:
        """Delete a record."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class SharedSlots:
    """The store's rate-limit numbers, or this process's memory while the store is down (and back when it heals)."""

    shared = True

    def __init__(self, backend: SharedBackend) -> None:
        self._b = backend
        self.name = backend.name
        self._fallback = backend.fallback.slots
        self._memory = backend.fallback.memory_slots
        self.owed = OwedCounts()  # counted on memory during an outage, not yet in the store
        self._outages = backend.guard.outages
        self._epoch: str | None = None  # the store's epoch, once read (``owed``)
        self._journal = backend.journal  # what ended processes owed the store (``journal``), None: not kept
        self._journal_due = backend.journal is not None  # read at the first call, and at each try
        self._adopted: list[Path] = []  # journal files whose batches are in ``owed`` now
        self._journal_counted: set[str] = set()  # tokens of journal batches added to memory's counts
        self._alone: dict[str, float] = {}  # family -> until when starts granted on memory are in its window
        self._outage_at = -math.inf  # when the last outage began
        self._filled: set[str] = set()  # families whose window this outage took as full when it began

    def _outage(self) -> None:
        """The store failed: at the start of each outage, every count this process knows opens a batch holding it
        and the store's epoch (a store that comes back empty, like a restarted Redis, gets them back)."""
        outages = self._b.guard.outages
        if outages != self._outages:
            self._outages = outages
            self._outage_at = self._b.clock()
            self._filled.clear()
            for counter, n, expires in self._memory.counts(self._b.clock()):
                self.owed.start(counter, n, self._epoch, expires)

    @property
    def degraded(self) -> bool:
        """True while the store is down (calls run on this process's memory)."""
        return self._b.guard.degraded

    async def _stored(self, op: Callable[[], Awaitable[T]]) -> T:
        """``op`` on the store (StoreUnavailable while it is down); what an outage counted goes first, so the op
        (a booking under the cap, a count) sees it."""
        guard = self._b.guard
        if self._journal is not None and (self._journal_due or guard.degraded) and guard.ready:  # at each try
            self._journal_due = False
            fresh = [path for path in self._journal.files() if path not in self._adopted]
            for owed in self._journal.read(fresh):
                self.owed.adopt(owed.counter, owed.batch)
            self._adopted += fresh
        if self.owed:
            await self._repay()
        if self._adopted and not self.owed and self._journal is not None:  # added (or none it could read): gone
            self._journal.remove(self._adopted)
            self._adopted = []
        result = await guard.call(op)
        if self._epoch is None:  # read once the store answers (and again after each outage): which store it is
            with contextlib.suppress(StoreUnavailable):
                self._epoch = await self._b.guard.call(self._b.store.epoch)
        return result

    async def _repay(self) -> None:
        """Add what was counted on memory during an outage to the store, now that it answers (``owed``)."""
        b = self._b

        def merge(counter: str, batch: Batch) -> Awaitable[int]:
            return b.guard.call(lambda: b.store.merge_count(counter, batch, b.clock()))

        def seen(counter: str, n: int, expires: float) -> None:
            # The store may be a new one: the next outage's batches carry its epoch, read again; at once, so an
            # outage that begins before the rest is sent puts back no base of its own (``owed.start``).
            self._epoch = None
            self._memory.remember_count(counter, n, expires)
            logger.info("state: the requests counted during the outage were added to the store (now %d)", n)

        await self.owed.repay(merge, seen)

    async def finish(self) -> None:
        """The process ends: what it still owes the store goes in once more, else into a journal file of its own
        (with the journals it adopted) for whichever process next reaches the store."""
        if self.owed:
            with contextlib.suppress(StoreUnavailable):
                await self._stored(self._b.store.epoch)
        if self._journal is None:
            return
        if self.owed and self._journal.write([Owed(c, batch) for c, batch in self.owed.pending()]) is None:
            return
        self._journal.remove(self._adopted)
        self._adopted = []

    async def _counting_on(self, counter: str, now: float, expires: float) -> None:
        """On memory: a process with no count of ``counter`` yet (it never reached the store) starts from the count
        the file still lets it read (a locked SQLite file is still read) or the journals' bases; and the requests
        processes that ended meanwhile left in journals are added to memory's counts, each once. So the spending cap
        holds across the CLI, the skill and a server while the file refuses writes."""
        if self._journal is None:
            return
        if not self._memory.knows(counter):
            try:
                n = await self._b.store.count(counter, now)
            except Exception:  # unreadable too: the journals alone
                n = 0
            bases = [o.batch.base for o in self._journal.read(self._journal.files()) if o.counter == counter]
            self._memory.remember_count(counter, max([n, *bases]), expires)
        for owed in self._journal.unseen(self._journal_counted, self._memory.knows):
            self._memory.add_count(owed.counter, owed.batch.delta)

    def _seeded(self, ask: Ask) -> Ask:
        """A store that has no plan (new, or a Redis that restarted empty) starts from the one this process knows."""
        known = self._memory.plan_of(ask.own)
        if known is not None and known.learned and not ask.init.learned:
            return replace(ask, init=known)
        return ask

    async def _local(self, ask: Ask, now: float, peers: int) -> Decision:
        """Memory's decision at this process's share; the first of an outage takes the store's last window as full."""
        if self.degraded and ask.own not in self._filled and self._outage_at > -math.inf:
            self._filled.add(ask.own)
            self._memory.fill(ask, self._outage_at)
        return await self._memory.reserve(ask, now, peers=peers)

    def _alone_until(self, ask: Ask, now: float, peers: int) -> float:
        """Until when this process's share rules ``ask``'s starts beside the store: while the starts it made on
        memory are in the window, and for one window after the store came back (the others' are not in it either)."""
        until = self._alone.get(ask.own, -math.inf)
        back = self._b.guard.back_at
        if now - back < KEEP_STARTS_SECONDS:
            until = max(until, back + self._memory.window(ask, back, peers))
        return until

    async def reserve(self, ask: Ask, now: float) -> Decision:
        """The store's decision (its plan kept in memory for an outage); memory's while the store is down, at this
        process's share of the plan (``peers``) once the window the store kept has passed (its starts are out of
        reach: taken as full); and memory's too, beside the store's, until the starts made so are out of the window
        (a store back, perhaps empty, has none of them)."""
        peers = self._b.peers.count
        local: Decision | None = None
        if self.degraded or self._alone_until(ask, now, peers) > now:  # the store is tried only with a start in hand
            local = await self._local(ask, now, peers)
            if not local.granted:
                return local
        else:
            self._alone.pop(ask.own, None)
        stored = self._seeded(ask)
        try:
            decision = await self._stored(lambda: self._b.store.reserve(stored, now))
        except StoreUnavailable:
            self._outage()
            if local is None:
                local = await self._local(ask, now, peers)
            if local.granted:
                self._alone[ask.own] = now + self._memory.window(ask, now, peers)
            return local
        self._memory.remember(ask.own, decision.plan)
        await self._b.peers.beat()  # now and then: how many processes share the plan (``peers``)
        return decision

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Change the stored plan (and memory's, so an outage still knows it)."""
        stored = self._seeded(ask)  # memory's plan before the change: a store that has none gets it changed once
        local = await self._fallback.modify(ask, change)
        try:
            plan = await self._stored(lambda: self._b.store.modify(stored, change))
        except StoreUnavailable:
            self._outage()
            return local
        self._memory.remember(ask.own, plan)
        return plan

    async def retime(self, ask: Ask, at: float, token: str, sent: float, now: float) -> None:
        """Move a start that left late wherever it was booked: memory (during or just after an outage) and the store
        (a store that is down meanwhile keeps it where it was: the margin is all there is then)."""
        await self._memory.retime(ask, at, token, sent, now)
        if not self.degraded:
            with contextlib.suppress(StoreUnavailable):
                await self._stored(lambda: self._b.store.retime(ask, at, token, sent, now))

    async def started(self, ask: Ask, since: float, until: float, now: float) -> int:
        """The starts in the key's window the store holds, or memory's while it is down."""
        if self.degraded:
            return await self._memory.started(ask, since, until, now)
        try:
            return await self._stored(lambda: self._b.store.started(ask, since, until, now))
        except StoreUnavailable:
            return await self._memory.started(ask, since, until, now)

    def note_dropped(self, what: str, why: str) -> None:
        """A stored plan the limiter refused: the store's drop log names it in status (logged already)."""
        self._b.store.dropped.note(what, why, logged=True)

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """Count in the store; in memory while it is down (on from the store's last count), added to it later."""
        try:
            booked, n = await self._stored(lambda: self._b.store.book(counter, cap, expires, now))
        except StoreUnavailable:
            self._outage()
            await self._counting_on(counter, now, expires)
            booked, n = await self._fallback.book(counter, cap, expires, now)
            if booked:
                self.owed.add(counter, 1, expires)
            return booked, n
        self._memory.remember_count(counter, n, expires)
        return booked, n

    async def unbook(self, counter: str) -> None:
        """Give one back in the store (memory's copy too); on memory while it is down, given back to the store later."""
        try:
            await self._stored(lambda: self._b.store.unbook(counter))
        except StoreUnavailable:
            self._outage()
            await self._fallback.unbook(counter)
            self.owed.add(counter, -1, 0.0)
            return
        await self._fallback.unbook(counter)

    async def count(self, counter: str, now: float) -> int:
        """The store's count (memory's while it is down, with what it counted meanwhile); only a booking's count is
        kept for an outage (a count read here may come from a store that has not yet been given it back)."""
        try:
            return await self._stored(lambda: self._b.store.count(counter, now))
        except StoreUnavailable:
            self._outage()
            await self._counting_on(counter, now, math.inf)
            return await self._fallback.count(counter, now)


class SharedRecords:
    """JSON records in the store (memory while it is down); one that is not a JSON object is dropped."""

    def __init__(self, backend: SharedBackend) -> None:
        self._b = backend

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record, or None (also for one the store held that is not a JSON object: it is dropped)."""
        b = self._b
        try:
            text = await b.guard.call(lambda: b.store.record_get(key, b.clock()))
        except StoreUnavailable:
            return await b.fallback.records.get(key)
        if text is None:
            return None
        try:
            found = json.loads(text) if len(text) <= MAX_RECORD_CHARS else None
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
        await self.drop(key, "not a JSON object")
        return None

    async def put(self, key: str, value: dict[str, Any], ttl: float | None = None) -> None:
        """Store the record (in memory too, so a later outage still sees it)."""
        b = self._b
        await b.fallback.records.put(key, value, ttl)
        now = b.clock()
        expires = None if ttl is None else now + ttl
        text = json.dumps(value)
        with contextlib.suppress(StoreUnavailable):
            await b.guard.call(lambda: b.store.record_put(key, text, expires, now))

    async def drop(self, key: str, why: str) -> None:
        """Delete a record its reader refused, here and in memory; the status tool says so for a while."""
        b = self._b
        b.store.dropped.note("record", why)
        await b.fallback.memory_records.forget(key)
        with contextlib.suppress(StoreUnavailable):
            await b.guard.call(lambda: b.store.record_delete(key))


class SharedBackend(LimiterFactory):
    """A StateBackend over a Store: shared limiter numbers, cache and records, degrading to memory on failure.

    ``down``: why the store could not be opened (calls start on memory and the store is tried after the interval).
    ``heartbeat``: where the processes sharing the store count themselves (``peers``; None: this one is alone).
    """

    def __init__(
        self,
        name: str,
        store: Store,
        options: StateOptions,
        *,
        down: str | None = None,
        journal: Journal | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        if not 0 < options.lease_seconds <= LEASE_SECONDS:
            raise ValueError(f"lease_seconds must be in (0, {LEASE_SECONDS}], got {options.lease_seconds!r}")
        super().__init__(clock=options.clock, sleep=options.sleep)
        self.name = name
        self.store = store
        self.lease_seconds = options.lease_seconds
        retry = options.retry_interval
        self.guard = Guard(f"{name} state", clock=options.clock, retry_interval=retry, down=down)
        # a cache of its own fails and heals on its own (the counters stay shared while it is gone)
        separate = store.cache_location() != store.location()
        cache_guard = Guard(f"{name} cache", clock=options.clock, retry_interval=retry)
        self.cache_guard = cache_guard if separate else self.guard
        self.fallback = MemoryBackend(
            clock=options.clock, sleep=options.sleep, cache_max_entries=options.cache_max_entries
        )
        self.later = Later()  # the cache's writes that run beside the reply
        self.journal = journal
        self.peers = Peers(heartbeat, clock=options.clock)
        self.shared_slots = SharedSlots(self)
        self.slots: SlotStore = self.shared_slots
        self.local_slots: SlotStore = MemorySlots(clock=options.clock, dropped=self.fallback.memory_slots.dropped)
        self.cache: SharedCache = SharedStoreCache(
            store, self.cache_guard, self.fallback.cache, self.later, options, dropped=store.dropped
        )
        self.records: RecordStore = SharedRecords(self)

    def health(self) -> dict[str, Any]:
        """Backend, where the state and the cache live, whether calls currently run on the per-process fallback,
        and stored values dropped lately."""
        out: dict[str, Any] = {
            "backend": self.name,
            "location": self.store.location(),
            "cache_location": self.store.cache_location(),
            "degraded": self.guard.degraded or self.cache_guard.degraded,
        }
        warnings = dict.fromkeys(w for w in (self.guard.warning, self.cache_guard.warning) if w is not None)
        if warnings:
            out["warning"] = "; ".join(warnings)
        dropped = self.store.dropped.snapshot()
        if dropped is not None:
            out["dropped"] = dropped
        return out

    async def settle(self) -> None:
        """Wait for the writes started beside a reply."""
        await self.later.settle()

    def owned(self) -> AbstractAsyncContextManager[None]:
        """The writes beside a reply run in a task group while this lasts (``Later.owned``)."""
        return self.later.owned()

    async def aclose(self) -> None:
        """Finish the writes started and what is owed (a journal file keeps what the store cannot take), then close
        the store."""
        await self.later.settle()
        await self.shared_slots.finish()
        if not self.guard.degraded:  # (down: its beat expires by itself, no timeout spent on it)
            await self.peers.leave()
        await self.store.aclose()
