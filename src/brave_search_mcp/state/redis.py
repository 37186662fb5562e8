"""Shared state for replicas in Redis: the limiter is one atomic Lua script, the cache SET PX, the lease SET NX PX.

redis-py is an optional extra (``brave-search-mcp[redis]``) imported only when a ``redis://`` URL is
used. Every Redis error becomes StoreUnavailable, so the shared layer serves calls from per-process
memory while Redis is down, paused (every command is bounded by ``COMMAND_TIMEOUT_SECONDS``) or full (health says
so) and returns to Redis by itself when it is back. Times stored for the limiter are on the Redis server's clock
(``TIME`` inside the scripts): replicas whose clocks disagree still share one window; each converts to its own clock
on the way back. The cache is bounded by this project's own entry and byte limits (least recently used first,
in the scripts), not by whatever maxmemory policy the server has.

A Redis Cluster (``redis+cluster://`` any node) works too: every script is handed its keys, and the keys of one
script share a hash slot (``redis_keys``).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from brave_search_mcp.clock import Clock
from brave_search_mcp.logs import OnceEach
from brave_search_mcp.ratelimit.plan import (
    MAX_MONTH_REQUESTS,
    Ask,
    Decision,
    PlanState,
)
from brave_search_mcp.state.base import DropLog, StateBackend, StateOptions, StoreUnavailable
from brave_search_mcp.state.owed import Batch
from brave_search_mcp.state.redis_client import COMMAND_TIMEOUT_SECONDS, connect, redact
from brave_search_mcp.state.redis_flights import Flights
from brave_search_mcp.state.redis_keys import (
    CACHE_KEYS,
    CACHE_VALUE_PREFIX,
    EPOCH_KEY,
    cache_key,
    count_key,
    lease_key,
    merged_key,
    once_key,
    plan_key,
    record_key,
    restored_key,
    starts_key,
)
from brave_search_mcp.state.redis_once import ONCE_KEPT_MS, UnsureCalls
from brave_search_mcp.state.redis_peers import RedisHeartbeat
from brave_search_mcp.state.redis_plans import fields_of, plan_of, reserve_args, shifted, text_of
from brave_search_mcp.state.redis_scripts import (
    BOOK,
    CACHE_CLEAR,
    CACHE_DROP,
    CACHE_STATS,
    EPOCH,
    GET_OR_LEASE,
    MERGE,
    PLAN_READ,
    PLAN_SWAP,
    PUT_RELEASE,
    RENEW,
    RESERVE,
    UNBOOK,
)
from brave_search_mcp.state.redis_window import RETIME, STARTED
from brave_search_mcp.state.shared import SharedBackend

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)
T = TypeVar("T")

MAX_SWAP_RETRIES = 16
MERGED_KEPT_MS = 7 * 86400 * 1000  # how long a merged outage batch's token is remembered


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisStore:
    """The Store protocol on a redis.asyncio client.

    ``clock``: the backend's clock; given, the limiter's times are stored on the server's clock and converted to
    this one on the way back (None: times are stored as the caller gives them). ``max_entries`` / ``max_bytes``
    bound the cache.
    """

    def __init__(
        self,
        url: str,
        client: Redis,
        *,
        clock: Clock | None = None,
        max_entries: int = 256,
        max_bytes: int | None = None,
        waits: Redis | None = None,
    ) -> None:
        self._url = url
        self._r = client
        self._waits = client if waits is None else waits  # blocking waits (``cache_wait``): reads that may last
        self._flights = Flights(client, self._waits, read_slack=COMMAND_TIMEOUT_SECONDS)
        self._clock = clock
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self.dropped = DropLog()
        self._expected: str | None = None  # the epoch bookings expect (``epoch``)
        self._unsure = UnsureCalls()  # failed bookings the server may have run: settled by the next merge
        self._reserve = client.register_script(RESERVE)
        self._retime = client.register_script(RETIME)
        self._started = client.register_script(STARTED)
        self._book = client.register_script(BOOK)
        self._unbook = client.register_script(UNBOOK)
        self._merge = client.register_script(MERGE)
        self._epoch = client.register_script(EPOCH)
        self._get_or_lease = client.register_script(GET_OR_LEASE)
        self._renew = client.register_script(RENEW)
        self._put_release = client.register_script(PUT_RELEASE)
        self._drop = client.register_script(CACHE_DROP)
        self._stats = client.register_script(CACHE_STATS)
        self._clear = client.register_script(CACHE_CLEAR)
        self._plan_read = client.register_script(PLAN_READ)
        self._plan_swap = client.register_script(PLAN_SWAP)
        self._warnings = OnceEach(logger)

    def location(self) -> str:
        """The Redis URL without its password."""
        return redact(self._url)

    def cache_location(self) -> str:
        """The same server holds the cache."""
        return self.location()

    async def _call(self, op: Callable[[], Awaitable[T]]) -> T:
        from redis.exceptions import RedisError

        try:
            return await op()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def reserve(self, ask: Ask, now: float) -> Decision:
        """Run the reservation script: ``plan.decide`` on the stored plan(s) and starts, in one atomic step."""
        token = uuid.uuid4().hex  # the start's member, and the call's ``once`` marker
        keys = [plan_key(ask.own), starts_key(ask.own)]
        if ask.shared is not None:
            keys += [plan_key(ask.shared), starts_key(ask.shared)]
        keys.append(once_key(token))
        args = reserve_args(ask, now, token, server_clock=self._clock is not None)
        found = await self._call(lambda: self._reserve(keys=keys, args=args))
        granted, ready, reason, flat, shift, dropped, full = found
        if dropped:
            self.dropped.note("rate-limit plan in Redis", "not a plan any rule makes", logged=True)
        by = float(shift)
        plan = shifted(plan_of(flat), -by)
        return Decision(bool(granted), float(ready) - by, text_of(reason), plan, bool(dropped), bool(full), token)

    async def retime(self, ask: Ask, at: float, token: str, sent: float, now: float) -> None:
        """Move the start named ``token`` to ``sent`` in each of ``ask``'s windows (the script renames it: once)."""
        keys = [starts_key(name) for name in (ask.own, ask.shared) if name is not None]
        args = [token, repr(float(now)), repr(float(sent)), "1" if self._clock is not None else ""]
        await self._call(lambda: self._retime(keys=keys, args=args))

    async def started(self, ask: Ask, since: float, until: float, now: float) -> int:
        """Starts in the key's window (the primary family's) within ``(since, until]``, on the caller's clock."""
        keys = [starts_key(ask.shared or ask.own)]
        args = [repr(float(t)) for t in (since, now, until)] + ["1" if self._clock is not None else ""]
        return int(await self._call(lambda: self._started(keys=keys, args=args)))

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Read the stored plan (and the server's clock), change it, write it back only if it is still what was read
        (a compare-and-set script; bounded retries)."""
        key = plan_key(ask.own)

        async def attempt() -> PlanState:
            for _ in range(MAX_SWAP_RETRIES):
                flat, seconds, micros = await self._plan_read(keys=[key], args=[])
                items = [text_of(x) for x in flat]
                raw = {items[i]: items[i + 1] for i in range(0, len(items) - 1, 2)}
                by = 0.0 if self._clock is None else int(seconds) + int(micros) / 1e6 - self._clock()
                old = self._decoded(raw, ask.init, by)
                new = change(old)
                if new == old and raw and old is not ask.init:
                    return old
                args = [json.dumps(raw), json.dumps(fields_of(shifted(new, by))), str(ONCE_KEPT_MS)]
                if await self._plan_swap(keys=[key, once_key(uuid.uuid4().hex)], args=args):
                    return new
            raise StoreUnavailable("plan update kept conflicting")

        return await self._call(attempt)

    def _decoded(self, raw: dict[Any, Any], init: PlanState, by: float) -> PlanState:
        """The stored plan hash as a plan on this clock (``by``: the server's minus this one); ``init`` when there is
        none, or (noted as dropped) when it is not sound."""
        if not raw:
            return init
        try:
            return shifted(plan_of([x for kv in raw.items() for x in kv]), -by)
        except ValueError as exc:
            self.dropped.note("rate-limit plan in Redis", str(exc)[:120])
            return init

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """The booking script: count one unless ``cap`` is reached (a broken stored count restarts from 0);
        StoreUnavailable when the server is not the one whose epoch this store last read (restarted empty: the
        counts this process knew must be put back first)."""
        args: list[str | int] = [
            -1 if cap is None else cap,
            _ms(expires - now),
            self._expected or "",
            MAX_MONTH_REQUESTS,
            ONCE_KEPT_MS,
        ]
        keys = [count_key(counter), EPOCH_KEY, once_key(uuid.uuid4().hex)]
        booked, n, broken, damaged = await self._unsure_call(counter, 1, keys, args, self._book)
        if broken:
            self._unreadable("a script found it broken")
        if damaged:
            self._epoch_damaged()
        if booked == -1:
            raise StoreUnavailable("the Redis server lost this project's state (restarted empty); counts are put back")
        return bool(booked), int(n)

    async def epoch(self) -> str:
        """The server's random id for this project's keys (made on first use): a server restarted empty has another.
        Bookings on a server with another epoch fail from now on (``book``)."""
        args = [uuid.uuid4().hex, self._expected or ""]
        epoch, damaged = await self._call(lambda: self._epoch(keys=[EPOCH_KEY], args=args))
        if damaged:
            self._epoch_damaged()
        self._expected = text_of(epoch)
        return self._expected

    def _epoch_damaged(self) -> None:
        """A stored epoch that is no id this project makes was rebuilt by a script (as the one this process last
        read, when it read one): one warning, and status names it."""
        self.dropped.note("state epoch in Redis", "not an epoch id")

    async def merge_count(self, counter: str, batch: Batch, now: float) -> int:
        """The merge script: the outage's batch added once per token; on another epoch its base put back too. A
        broken stored count restarts from 0 (as ``book`` reads it) instead of failing every merge."""
        unsure = self._unsure.of(counter)
        keys = [count_key(counter), merged_key(batch.token), EPOCH_KEY, restored_key(counter)]
        keys += [marker for marker, _ in unsure]
        ms = _ms(batch.expires - now) if batch.expires > now else 0
        args: list[str | int] = [
            batch.delta,
            batch.base,
            ms,
            MERGED_KEPT_MS,
            batch.epoch or "",
            uuid.uuid4().hex,
            MAX_MONTH_REQUESTS,
            self._expected or batch.epoch or "",
            *(sign for _, sign in unsure),
            ONCE_KEPT_MS,
        ]
        merged, epoch, broken, damaged = await self._call(lambda: self._merge(keys=keys, args=args))
        self._unsure.settled(counter, unsure)
        if broken:
            self._unreadable("a script found it broken")
        if damaged:
            self._epoch_damaged()
        self._expected = text_of(epoch)  # the counts this process knew are in: book on this server from now on
        return int(merged)

    async def unbook(self, counter: str) -> None:
        """Give one back (never below zero; once, however often the call is sent)."""
        keys = [count_key(counter), once_key(uuid.uuid4().hex)]
        await self._unsure_call(counter, -1, keys, [MAX_MONTH_REQUESTS, ONCE_KEPT_MS], self._unbook)

    async def _unsure_call(self, counter: str, sign: int, keys: list[str], args: list[str | int], script: Any) -> Any:
        """A booking (``sign`` 1) or give-back (-1) script call; failed, the server may still run it: its marker is
        kept for the next merge (``redis_once``)."""
        try:
            return await self._call(lambda: script(keys=keys, args=args))
        except StoreUnavailable:
            self._unsure.note(counter, keys[-1], sign)
            raise

    async def count(self, counter: str, now: float) -> int:
        """Requests counted (Redis expires the counter itself); 0 for a stored value that is no count."""
        raw = await self._call(lambda: self._r.get(count_key(counter)))
        if raw is None:
            return 0
        try:
            n = int(raw)
        except ValueError:
            n = -1
        if 0 <= n <= MAX_MONTH_REQUESTS:
            return n
        self._unreadable(repr(raw)[:60])
        return 0

    def _unreadable(self, shown: str) -> None:
        """A stored monthly count that is no count a month can reach was read as 0: one warning, and status names it
        (``DropLog``)."""
        message = "A monthly request count in Redis was unreadable (%s); it restarts from 0."
        self._warnings.warn("counter", message, shown)
        self.dropped.note("monthly request count in Redis", "not a count a month can reach", logged=True)

    def _cache_keys(self, key: str) -> list[str]:
        return [cache_key(key), lease_key(key), *CACHE_KEYS]

    async def cache_get_or_lease(self, key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
        """One script: the stored value (its last use noted; Redis expires entries itself), else SET NX PX of the
        lease."""
        keys = self._cache_keys(key)
        args: list[str | int] = [owner, _ms(until - now), key]
        found = await self._call(lambda: self._get_or_lease(keys=keys, args=args))
        if found[0] == 1:
            return bytes(found[1]), False
        return None, found[0] == 2

    async def cache_renew(self, key: str, owner: str, now: float, until: float) -> bool:
        """The lease's PX moved on if ``owner`` still holds it."""
        keys = [lease_key(key)]
        return bool(await self._call(lambda: self._renew(keys=keys, args=[owner, _ms(until - now)])))

    async def cache_put_release(self, key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
        """One script: SET with PX, the least recently used entries over the bounds evicted, then the owner's lease
        goes. A value over the byte bound (or with no entries allowed) is not stored."""
        too_big = self._max_entries <= 0 or (
            self._max_bytes is not None and value is not None and len(value) > self._max_bytes
        )
        keys = self._cache_keys(key)
        bounds: list[str | int] = [
            self._max_entries,
            -1 if self._max_bytes is None else self._max_bytes,
        ]
        stored: list[str | int | bytes] = ["", b""] if value is None or too_big else [_ms(expires - now), value]
        args: list[str | int | bytes] = [owner, *stored, key, *bounds]
        evicted = await self._call(lambda: self._put_release(keys=keys, args=args))
        if evicted:  # their bookkeeping is gone; their values go now (a script is handed, never makes, its keys)
            names = [cache_key(text_of(member)) for member in evicted]
            await self._call(lambda: self._r.unlink(*names))
        await self._call(lambda: self._flights.ended(key, owner))

    async def cache_wait(self, key: str, seconds: float) -> None:
        """Until another replica's flight for ``key`` stored its answer, or ``seconds`` (``redis_flights``)."""
        await self._call(lambda: self._flights.wait(key, seconds))

    async def cache_drop(self, key: str) -> None:
        """Delete one value and its bookkeeping."""
        keys = self._cache_keys(key)
        await self._call(lambda: self._drop(keys=keys, args=[key]))

    async def cache_stats(self, now: float) -> dict[str, Any]:
        """Entries and bytes stored now (the expired ones forgotten first) and the bounds."""
        keys = self._cache_keys("")  # the value and lease keys are placeholders here
        n, size = await self._call(lambda: self._stats(keys=keys, args=[]))
        return {"entries": int(n), "bytes": int(size), "max": self._max_entries, "max_bytes": self._max_bytes}

    async def cache_clear(self) -> None:
        """Delete every cached value of this project (bounded scan) and the bookkeeping."""

        async def clear() -> None:
            async for name in self._r.scan_iter(match=CACHE_VALUE_PREFIX + "*", count=500):
                await self._r.unlink(name)
            await self._clear(keys=list(CACHE_KEYS), args=[])

        await self._call(clear)

    async def record_get(self, key: str, now: float) -> str | None:
        """A live record's text, or None."""
        raw = await self._call(lambda: self._r.get(record_key(key)))
        if raw is None:
            return None
        return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)

    async def record_put(self, key: str, text: str, expires: float | None, now: float) -> None:
        """Store a record (with PX when it expires)."""
        px = None if expires is None else _ms(expires - now)
        await self._call(lambda: self._r.set(record_key(key), text, px=px))

    async def record_delete(self, key: str) -> None:
        """Delete a record."""
        await self._call(lambda: self._r.delete(record_key(key)))

    async def aclose(self) -> None:
        """Close the connection pools."""
        await self._r.aclose()
        if self._waits is not self._r:
            await self._waits.aclose()


async def open_redis(url: str, options: StateOptions) -> StateBackend:
    """Connect lazily to Redis (a server that is down now is retried later; calls use memory meanwhile)."""
    client = connect(url)
    waits = connect(url, blocking=True)  # another replica's fetch awaited: its own pool, no read timeout
    # the wall clock: times are kept on the server's; an injected clock (a test's) keeps its own time
    clock = options.clock if options.clock is time.time else None
    store = RedisStore(
        url, client, clock=clock, max_entries=options.cache_max_entries, max_bytes=options.cache_max_bytes, waits=waits
    )
    heartbeat = RedisHeartbeat(client, server_clock=clock is not None)
    return SharedBackend("redis", store, options, heartbeat=heartbeat)
