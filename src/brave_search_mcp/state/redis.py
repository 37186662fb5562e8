"""Shared state for replicas in Redis: the limiter is one atomic Lua script, the cache SET PX, the lease SET NX PX.

redis-py is an optional extra (``brave-search-mcp[redis]``) imported only when a ``redis://`` URL is
used. Every Redis error becomes StoreUnavailable, so the shared layer serves calls from per-process
memory while Redis is down (health says so) and returns to Redis by itself when it is back.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from brave_search_mcp.logs import OnceEach
from brave_search_mcp.ratelimit.plan import (
    CLOCK_SKEW_SECONDS,
    KEEP_STARTS_SECONDS,
    MAX_BURST,
    MAX_MONTH_REQUESTS,
    MAX_RATE,
    MIN_RATE,
    PROBE_HOLD_SECONDS,
    QUOTA_TRIAL_SECONDS,
    RECOVERY_FACTOR,
    RECOVERY_PERIOD_SECONDS,
    SPREAD_SECONDS,
    Ask,
    Decision,
    PlanState,
)
from brave_search_mcp.state.base import StateBackend, StateOptions, StoreUnavailable
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS, MONTH_SECONDS

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)
T = TypeVar("T")

SOCKET_TIMEOUT_SECONDS = 0.5  # a down Redis must cost a call milliseconds, not seconds
MAX_WATCH_RETRIES = 16
PREFIX = "brave-search-mcp:"

# ``plan.decide`` in Lua, so a reservation is one atomic step: the contract test tests/test_rate_rules.py runs
# this script and the Python rule on the same inputs and demands the same decisions. A plan is a hash of
# PlanState's fields (an absent field is None / never).
# KEYS: own plan, own starts[, shared plan, shared starts].  ARGV: now, initial plan (JSON), member, margin
# factor, margin seconds, keep seconds, recovery factor, recovery period, probe hold, pinned rate, pinned burst,
# spread seconds, then the bounds of a sound plan (``PlanState.check`` and ``trusted``): least and most rate, most
# burst, clock skew, month, longest pause, default trial period.
# Returns {granted 1/0, ready, reason, plan as field/value pairs, 1 when the stored plan was dropped and rebuilt}.
_RESERVE = """
local NEVER = -math.huge
local now = tonumber(ARGV[1])
local MF, MS, KEEP = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local RF, RP, HOLD = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local SPREAD = tonumber(ARGV[12])
local MINR, MAXR, MAXB = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local SKEW, MONTH, MAXWAIT, EVERY = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18]), tonumber(ARGV[19])
local function finite(v) return v ~= nil and v == v and v ~= math.huge and v ~= -math.huge end
local function load(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil, true end
  local p, ok = {}, true
  for i = 1, #raw, 2 do
    local v = tonumber(raw[i + 1])
    if not finite(v) then ok = false end
    p[raw[i]] = v
  end
  return p, ok
end
local function t(p, f) if p[f] == nil then return NEVER end return p[f] end
local function whole(v, low, high) return v >= low and v <= high and v == math.floor(v) end
local function sound(p)
  for _, f in ipairs({'plan_rate', 'penalty_rate'}) do
    if p[f] ~= nil and (p[f] < MINR or p[f] > MAXR) then return false end
  end
  if not whole(p.plan_burst or 1, 1, MAXB) or not whole(p.clean or 0, 0, MAXB) then return false end
  local every = p.quota_every or EVERY
  if every <= 0 or every > MONTH then return false end
  local ahead = now + SKEW
  return math.max(t(p, 'penalty_at'), t(p, 'strike_at')) <= ahead and t(p, 'blocked_until') <= ahead + MAXWAIT
    and t(p, 'probe_until') <= ahead + HOLD and t(p, 'quota_until') <= ahead + MONTH
    and t(p, 'quota_trial_at') <= ahead + every
end
local function pairs_of(p)
  local out = {}
  for f, v in pairs(p) do out[#out + 1] = f; out[#out + 1] = string.format('%.17g', v) end
  return out
end
local function in_force(p)
  if p.plan_rate == nil then return nil, nil end
  local rate, burst = p.plan_rate, p.plan_burst or 1
  if p.penalty_rate ~= nil then
    local minutes = math.floor((now - t(p, 'penalty_at')) / RP)
    if minutes < 0 then minutes = 0 end
    if minutes > 200 then minutes = 200 end
    rate = math.min(rate, p.penalty_rate * RF ^ minutes)
  end
  return rate, burst
end
local function spread(p)
  local rate, burst = in_force(p)
  if rate == nil then return nil end
  local clean = p.clean or 0
  if rate >= p.plan_rate and clean >= burst then return nil end
  return math.max(1, math.min(burst, math.max(clean, math.floor(rate * SPREAD))))
end
local function nth(key, n)
  local last = redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')
  if #last < 2 then return NEVER end
  return tonumber(last[2])
end
local function recent(key, rate, burst, at_once)
  local h = 0
  if rate ~= nil then h = burst / rate * MF + MS end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - math.max(h, KEEP))
  redis.call('ZREMRANGEBYSCORE', key, '(' .. string.format('%.17g', now + SKEW), '+inf')
  if rate == nil then return NEVER end
  local at = nth(key, burst) + h
  if at_once ~= nil then at = math.max(at, nth(key, at_once) + at_once / rate) end
  return at
end
local own, own_ok = load(KEYS[1])
local dropped = 0
if own ~= nil and not (own_ok and sound(own)) then
  own, dropped = nil, 1
  redis.call('DEL', KEYS[1])
end
if own == nil then
  own = {}
  for f, v in pairs(cjson.decode(ARGV[2])) do if v ~= cjson.null then own[f] = v end end
  redis.call('HSET', KEYS[1], unpack(pairs_of(own)))
end
local shared = nil
if #KEYS > 2 then
  local found, found_ok = load(KEYS[3])
  if found ~= nil and found_ok and sound(found) then shared = found end
end
if t(own, 'quota_until') > now and now < t(own, 'quota_trial_at') then
  return {0, string.format('%.17g', math.min(own.quota_until, own.quota_trial_at)), 'quota', pairs_of(own), dropped}
end
local ready, reason = now, 'ok'
local pause = t(own, 'blocked_until')
if shared ~= nil and t(shared, 'blocked_until') > pause then pause = t(shared, 'blocked_until') end
if pause > ready then ready, reason = pause, 'paused' end
local eff = own
if ARGV[10] ~= '' then
  eff = {plan_rate = tonumber(ARGV[10]), plan_burst = tonumber(ARGV[11]), clean = tonumber(ARGV[11])}
end
local rate, burst = in_force(eff)
local at = recent(KEYS[2], rate, burst, spread(eff))
if rate == nil then
  if t(own, 'probe_until') > ready then ready, reason = own.probe_until, 'probe' end
elseif at > ready then
  ready, reason = at, 'window'
end
if #KEYS > 2 then
  local srate, sburst, sspread = nil, nil, nil
  if shared ~= nil then srate, sburst = in_force(shared); sspread = spread(shared) end
  at = recent(KEYS[4], srate, sburst, sspread)
  if at > ready then ready, reason = at, 'window' end
end
if ready > now then return {0, string.format('%.17g', ready), reason, pairs_of(own), dropped} end
local changed = false
if rate == nil then own.probe_until = now + HOLD; changed = true end
if t(own, 'quota_until') > now then own.quota_trial_at = now + (own.quota_every or 600); changed = true end
if changed then redis.call('HSET', KEYS[1], unpack(pairs_of(own))) end
local ms = math.ceil((math.max(KEEP, 60) + 1) * 1000)
for i = 2, #KEYS, 2 do
  redis.call('ZADD', KEYS[i], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[i], ms)
end
return {1, string.format('%.17g', now), 'ok', pairs_of(own), dropped}
"""
# A stored count that is not a whole number a month can reach (ARGV's last: the most) is a broken record: it
# restarts from 0 instead of closing the spending cap (or failing every booking) for the rest of the month.
_COUNT = """
local function count(key, most)
  local n = tonumber(redis.call('GET', key) or '0')
  if n == nil or n ~= n or n < 0 or n > most or n ~= math.floor(n) then
    redis.call('SET', key, '0', 'KEEPTTL')
    return 0
  end
  return n
end
"""
# KEYS: counter.  ARGV: cap (-1: none), ms to live, most.  Returns {booked 1/0, count}.
_BOOK = (
    _COUNT
    + """
local n = count(KEYS[1], tonumber(ARGV[3]))
local cap = tonumber(ARGV[1])
if cap >= 0 and n >= cap then return {0, n} end
n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, n}
"""
)
# KEYS: counter.  ARGV: most.
_UNBOOK = (
    _COUNT
    + """
if count(KEYS[1], tonumber(ARGV[1])) > 0 then return redis.call('DECR', KEYS[1]) end
return 0
"""
)
# KEYS: cache, lease.  ARGV: owner, lease ms.  Returns {1, value} for a stored value, else {2} when the lease was
# taken, {0} while another holds it: a lease only while no value is stored (no double fetch).
_GET_OR_LEASE = """
local value = redis.call('GET', KEYS[1])
if value then return {1, value} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
return {0}
"""
# KEYS: cache, lease.  ARGV: owner, ms to live ('': store nothing), value.  The value, then the owner's lease goes.
_PUT_RELEASE = """
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def fields_of(plan: PlanState) -> dict[str, str]:
    """A plan as the hash the script reads: PlanState's set fields, numbers in full precision."""
    return {name: repr(value) for name, value in plan.to_json().items() if value is not None}


def plan_of(flat: list[bytes | str]) -> PlanState:
    """A plan from the hash's field/value pairs; ``ValueError`` when they are not a sound plan's."""
    items = [_text(x) for x in flat]
    return PlanState.from_json({items[i]: float(items[i + 1]) for i in range(0, len(items), 2)})


# The bounds of a sound plan, as the reservation script reads them after its own arguments.
_BOUNDS = (
    MIN_RATE,
    MAX_RATE,
    MAX_BURST,
    CLOCK_SKEW_SECONDS,
    MONTH_SECONDS,
    MAX_SERVER_WAIT_SECONDS,
    QUOTA_TRIAL_SECONDS,
)


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisStore:
    """The Store protocol on a redis.asyncio client."""

    def __init__(self, url: str, client: Redis) -> None:
        self._url = url
        self._r = client
        self._reserve = client.register_script(_RESERVE)
        self._book = client.register_script(_BOOK)
        self._unbook = client.register_script(_UNBOOK)
        self._get_or_lease = client.register_script(_GET_OR_LEASE)
        self._put_release = client.register_script(_PUT_RELEASE)
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
        keys = [f"{PREFIX}plan:{ask.own}", f"{PREFIX}starts:{ask.own}"]
        if ask.shared is not None:
            keys += [f"{PREFIX}plan:{ask.shared}", f"{PREFIX}starts:{ask.shared}"]
        pinned = ("", "") if ask.pinned is None else (repr(float(ask.pinned[0])), str(int(ask.pinned[1])))
        args: list[str | float] = [
            repr(float(now)),
            json.dumps(ask.init.to_json()),
            uuid.uuid4().hex,
            repr(ask.margin[0]),
            repr(ask.margin[1]),
            repr(KEEP_STARTS_SECONDS),
            repr(RECOVERY_FACTOR),
            repr(RECOVERY_PERIOD_SECONDS),
            repr(PROBE_HOLD_SECONDS),
            *pinned,
            repr(SPREAD_SECONDS),
            *(repr(float(bound)) for bound in _BOUNDS),
        ]
        granted, ready, reason, flat, dropped = await self._call(lambda: self._reserve(keys=keys, args=args))
        return Decision(bool(granted), float(ready), _text(reason), plan_of(flat), bool(dropped))

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Optimistic WATCH/MULTI update of the stored plan hash (bounded retries)."""
        from redis.exceptions import WatchError

        key = f"{PREFIX}plan:{ask.own}"

        async def attempt() -> PlanState:
            for _ in range(MAX_WATCH_RETRIES):
                async with self._r.pipeline(transaction=True) as pipe:
                    try:
                        await pipe.watch(key)
                        raw: dict[Any, Any] = await pipe.hgetall(key)  # type: ignore[misc]
                        old = self._decoded(raw, ask.init)
                        new = change(old)
                        if new == old and raw and old is not ask.init:
                            return old
                        pipe.multi()  # type: ignore[no-untyped-call]
                        pipe.delete(key)
                        pipe.hset(key, mapping=fields_of(new))
                        await pipe.execute()
                        return new
                    except WatchError:
                        continue
            raise StoreUnavailable("plan update kept conflicting")

        return await self._call(attempt)

    def _decoded(self, raw: dict[Any, Any], init: PlanState) -> PlanState:
        """The stored plan hash as a plan; ``init`` when there is none, or (one warning) when it is not sound."""
        if not raw:
            return init
        try:
            return plan_of([x for kv in raw.items() for x in kv])
        except ValueError as exc:
            self._warnings.warn("plan", "A stored rate-limit plan in Redis was unreadable (%s); it is rebuilt.", exc)
            return init

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """The booking script: count one unless ``cap`` is reached (a broken stored count restarts from 0)."""
        args = [-1 if cap is None else cap, _ms(expires - now), MAX_MONTH_REQUESTS]
        booked, n = await self._call(lambda: self._book(keys=[f"{PREFIX}count:{counter}"], args=args))
        return bool(booked), int(n)

    async def unbook(self, counter: str) -> None:
        """Give one back (never below zero)."""
        await self._call(lambda: self._unbook(keys=[f"{PREFIX}count:{counter}"], args=[MAX_MONTH_REQUESTS]))

    async def count(self, counter: str, now: float) -> int:
        """Requests counted (Redis expires the counter itself); 0 for a stored value that is no count."""
        raw = await self._call(lambda: self._r.get(f"{PREFIX}count:{counter}"))
        if raw is None:
            return 0
        try:
            n = int(raw)
        except ValueError:
            n = -1
        if 0 <= n <= MAX_MONTH_REQUESTS:
            return n
        self._warnings.warn("counter", "A monthly request count in Redis was unreadable (%s).", repr(raw)[:60])
        return 0

    async def cache_get_or_lease(self, key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
        """One script: the stored value (Redis expires entries itself), else SET NX PX of the lease."""
        keys = [f"{PREFIX}cache:{key}", f"{PREFIX}lease:{key}"]
        found = await self._call(lambda: self._get_or_lease(keys=keys, args=[owner, _ms(until - now)]))
        if found[0] == 1:
            return bytes(found[1]), False
        return None, found[0] == 2

    async def cache_put_release(self, key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
        """One script: SET with PX (the size bound is Redis's own maxmemory policy), then the owner's lease goes."""
        keys = [f"{PREFIX}cache:{key}", f"{PREFIX}lease:{key}"]
        args: list[str | int | bytes] = [owner, "", b""] if value is None else [owner, _ms(expires - now), value]
        await self._call(lambda: self._put_release(keys=keys, args=args))

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
