"""Shared state for replicas in Redis: the limiter is one atomic Lua script, the cache SET PX, the lease SET NX PX.

redis-py is an optional extra (``brave-search-mcp[redis]``) imported only when a ``redis://`` URL is
used. Every Redis error becomes StoreUnavailable, so the shared layer serves calls from per-process
memory while Redis is down (health says so) and returns to Redis by itself when it is back.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from brave_search_mcp.ratelimit.plan import (
    RAMP_PERIOD_SECONDS,
    RECOVERY_FACTOR,
    RECOVERY_PERIOD_SECONDS,
    WINDOW_MARGIN_FACTOR,
    WINDOW_MARGIN_SECONDS,
    PlanState,
)
from brave_search_mcp.state.base import StateBackend, StateOptions, StoreUnavailable
from brave_search_mcp.state.shared import SharedBackend

if TYPE_CHECKING:
    from redis.asyncio import Redis

T = TypeVar("T")

SOCKET_TIMEOUT_SECONDS = 0.5  # a down Redis must cost a call milliseconds, not seconds
KEEP_STARTS_SECONDS = 10.0
MAX_WATCH_RETRIES = 16
PREFIX = "brave-search-mcp:"

# KEYS: plan, starts.  ARGV: now, initial plan JSON, member, margin factor, margin s, keep s, recovery factor,
# recovery period, ramp period.
# The in-force rate mirrors PlanState.in_force; returns {granted 1/0, ready as string, plan JSON}.
_RESERVE = """
local raw = redis.call('GET', KEYS[1])
if not raw then raw = ARGV[2]; redis.call('SET', KEYS[1], raw) end
local p = cjson.decode(raw)
local now = tonumber(ARGV[1])
local rate, burst = p.plan_rate, p.plan_burst
if p.ramp_rate ~= nil and p.ramp_rate ~= cjson.null then
  local periods = math.floor((now - p.ramp_at) / tonumber(ARGV[9]))
  if periods < 0 then periods = 0 end
  if periods > 60 then periods = 60 end
  rate = math.min(rate, p.ramp_rate * 2 ^ periods)
end
if p.penalty_rate ~= nil and p.penalty_rate ~= cjson.null then
  local minutes = math.floor((now - p.penalty_at) / tonumber(ARGV[8]))
  if minutes < 0 then minutes = 0 end
  if minutes > 200 then minutes = 200 end
  rate = math.min(rate, p.penalty_rate * tonumber(ARGV[7]) ^ minutes)
end
if rate >= p.plan_rate then rate = p.plan_rate else burst = math.max(1, math.min(p.plan_burst, math.floor(rate))) end
local h = burst / rate * tonumber(ARGV[4]) + tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.6f', now - math.max(h, tonumber(ARGV[6]))))
local ready = now
if p.blocked_until ~= nil and p.blocked_until ~= cjson.null and p.blocked_until > ready then ready = p.blocked_until end
local last = redis.call('ZREVRANGE', KEYS[2], burst - 1, burst - 1, 'WITHSCORES')
if #last == 2 then
  local t = tonumber(last[2]) + h
  if t > ready then ready = t end
end
if ready <= now then
  redis.call('ZADD', KEYS[2], string.format('%.6f', now), ARGV[3])
  redis.call('PEXPIRE', KEYS[2], math.ceil((math.max(h, tonumber(ARGV[6])) + 1) * 1000))
end
return {ready <= now and 1 or 0, string.format('%.6f', ready), raw}
"""
# KEYS: cache, lease.  ARGV: owner, lease ms.  A lease only while no value is stored (no double fetch).
_TAKE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def redact(url: str) -> str:
    """The URL with any password replaced, for logs and the status tool."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisStore:
    """The Store protocol on a redis.asyncio client."""

    def __init__(self, url: str, client: Redis) -> None:
        self._url = url
        self._r = client
        self._reserve = client.register_script(_RESERVE)
        self._release = client.register_script(_RELEASE)
        self._take = client.register_script(_TAKE)

    def location(self) -> str:
        """The Redis URL without its password."""
        return redact(self._url)

    async def _call(self, op: Callable[[], Awaitable[T]]) -> T:
        from redis.exceptions import RedisError

        try:
            return await op()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def reserve(self, upstream: str, init: PlanState, now: float) -> tuple[bool, float, PlanState]:
        """Run the reservation script: record a start at ``now`` if it fits, else say when it will."""
        keys = [f"{PREFIX}plan:{upstream}", f"{PREFIX}starts:{upstream}"]
        args: list[str | float] = [
            f"{now:.6f}",
            json.dumps(init.to_json()),
            uuid.uuid4().hex,
            WINDOW_MARGIN_FACTOR,
            WINDOW_MARGIN_SECONDS,
            KEEP_STARTS_SECONDS,
            RECOVERY_FACTOR,
            RECOVERY_PERIOD_SECONDS,
            RAMP_PERIOD_SECONDS,
        ]
        granted, ready, raw = await self._call(lambda: self._reserve(keys=keys, args=args))
        return bool(granted), float(ready), PlanState.from_json(json.loads(raw))

    async def modify_plan(self, upstream: str, init: PlanState, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Optimistic WATCH/MULTI update of the stored plan (bounded retries)."""
        from redis.exceptions import WatchError

        key = f"{PREFIX}plan:{upstream}"

        async def attempt() -> PlanState:
            for _ in range(MAX_WATCH_RETRIES):
                async with self._r.pipeline(transaction=True) as pipe:
                    try:
                        await pipe.watch(key)
                        raw = await pipe.get(key)
                        old = init if raw is None else PlanState.from_json(json.loads(raw))
                        new = change(old)
                        if new == old and raw is not None:
                            return old
                        pipe.multi()  # type: ignore[no-untyped-call]
                        pipe.set(key, json.dumps(new.to_json()))
                        await pipe.execute()
                        return new
                    except WatchError:
                        continue
            raise StoreUnavailable("plan update kept conflicting")

        return await self._call(attempt)

    async def cache_get(self, key: str, now: float) -> bytes | None:
        """A live value, or None (Redis expires entries itself)."""
        value = await self._call(lambda: self._r.get(f"{PREFIX}cache:{key}"))
        return None if value is None else bytes(value)

    async def cache_put(self, key: str, value: bytes, expires: float, now: float) -> None:
        """SET with PX; the size bound is Redis's own maxmemory policy."""
        await self._call(lambda: self._r.set(f"{PREFIX}cache:{key}", value, px=_ms(expires - now)))

    async def lease_take(self, key: str, owner: str, now: float, until: float) -> bool:
        """SET NX PX (free or expired leases only), unless a value is already stored."""
        keys = [f"{PREFIX}cache:{key}", f"{PREFIX}lease:{key}"]
        return bool(await self._call(lambda: self._take(keys=keys, args=[owner, _ms(until - now)])))

    async def lease_release(self, key: str, owner: str) -> None:
        """Delete the lease only if ``owner`` still holds it (atomic)."""
        await self._call(lambda: self._release(keys=[f"{PREFIX}lease:{key}"], args=[owner]))

    async def cache_stats(self, now: float) -> dict[str, Any]:
        """Keys in the database (entries are bounded by Redis's maxmemory policy)."""
        return {"keys": await self._call(self._r.dbsize)}

    async def cache_clear(self) -> None:
        """Delete every cached value of this project (bounded scan)."""

        async def clear() -> None:
            async for name in self._r.scan_iter(match=f"{PREFIX}cache:*", count=500):
                await self._r.unlink(name)

        await self._call(clear)

    async def record_get(self, key: str, now: float) -> dict[str, Any] | None:
        """A live record, or None."""
        raw = await self._call(lambda: self._r.get(f"{PREFIX}rec:{key}"))
        found = None if raw is None else json.loads(raw)
        return found if isinstance(found, dict) else None

    async def record_put(self, key: str, value: dict[str, Any], expires: float | None, now: float) -> None:
        """Store a record (with PX when it expires)."""
        px = None if expires is None else _ms(expires - now)
        await self._call(lambda: self._r.set(f"{PREFIX}rec:{key}", json.dumps(value), px=px))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._r.aclose()


async def open_redis(url: str, options: StateOptions) -> StateBackend:
    """Connect lazily to Redis (a server that is down now is retried later; calls use memory meanwhile)."""
    try:
        from redis.asyncio import Redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ValueError(
            "BRAVE_SEARCH_STATE is a redis:// URL but redis-py is missing: install brave-search-mcp[redis]"
        ) from exc
    client = Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
        retry=Retry(NoBackoff(), 0),
    )
    store = RedisStore(url, client)
    return SharedBackend("redis", store, options)
