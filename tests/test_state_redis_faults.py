"""Issue 36 items 3 and 4 on a real redis-server: paused, full, restarted empty; the cache bounded by our own limits;
leases renewed; the limiter's times on the server's clock, so replicas whose clocks disagree share one window."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import anyio
import pytest
import redis

from brave_search_mcp.ratelimit.plan import Ask, PlanState
from brave_search_mcp.state.base import StateBackend, StoreUnavailable
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.owed import Batch
from brave_search_mcp.state.redis import RedisStore
from brave_search_mcp.state.redis_client import COMMAND_TIMEOUT_SECONDS, RETRY_PAUSE_SECONDS
from brave_search_mcp.state.redis_keys import count_key, lease_key
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.redis_server import RedisServer

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
pytestmark = pytest.mark.anyio

MONTH = "brave:key|:month:2026-11"
RETRY = 0.2  # real seconds: these faults are real processes


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as started:
        yield started


@pytest.fixture
async def backend(server: RedisServer) -> AsyncIterator[StateBackend]:
    opened = await open_state(server.url, cache_max_entries=10, retry_interval=RETRY)
    yield opened
    await opened.aclose()


async def book(backend: StateBackend, n: int = 1) -> int:
    count = 0
    for _ in range(n):
        _, count = await backend.slots.book(MONTH, None, time.time() + 86400, time.time())
    return count


async def until_shared(backend: StateBackend, seconds: float = 10.0) -> float:
    """Book until a booking reaches the store again (bounded); the seconds it took."""
    started = time.monotonic()
    while backend.health()["degraded"] or started == time.monotonic():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"still degraded after {seconds} s: {backend.health()}")
        await anyio.sleep(RETRY / 4)
        await book(backend)
    return time.monotonic() - started


def stored(server: RedisServer) -> int:
    with redis.Redis.from_url(server.url) as r:
        return int(r.get(count_key(MONTH)) or 0)


async def test_a_paused_redis_costs_one_call_its_socket_timeout_not_a_hang(
    server: RedisServer, backend: StateBackend
) -> None:
    """kill -STOP: the first call waits the command timeout twice (one more try) and runs on memory; the rest answer
    at once; after kill -CONT the store is used again and what was counted meanwhile is in it."""
    assert await book(backend, 2) == 2
    server.pause()
    try:
        started = time.monotonic()
        assert await book(backend) == 3
        assert time.monotonic() - started < 2 * COMMAND_TIMEOUT_SECONDS + RETRY_PAUSE_SECONDS + 1.0  # a try, one more
        started = time.monotonic()
        assert await book(backend, 5) == 8
        assert time.monotonic() - started < 0.5  # on memory, the store not asked
        assert "Timeout" in backend.health()["warning"]
    finally:
        server.resume()
    await until_shared(backend)
    assert stored(server) >= 9  # the paused server may also have run the booking that timed out: never fewer


async def test_a_full_redis_degrades_writes_and_is_used_again_once_there_is_room(
    server: RedisServer, backend: StateBackend
) -> None:
    assert await book(backend) == 1
    server.config("maxmemory-policy", "noeviction")
    server.config("maxmemory", "1")  # below what the server already uses: every write is refused (OOM)
    try:
        assert await book(backend, 2) == 3

        async def fetch() -> bytes:
            return b"answer"

        assert await backend.cache.get_or_fetch("q", fetch, 60) == (b"answer", False)
        assert "maxmemory" in backend.health()["warning"]
    finally:
        server.config("maxmemory", "0")
    await until_shared(backend)
    assert stored(server) >= 4


async def test_a_redis_restarted_empty_gets_back_the_counts_and_the_plan_replicas_knew(
    server: RedisServer, backend: StateBackend
) -> None:
    """No persistence: a restart empties the server. The replica puts back the month's count it knew (plus what
    it counted while the server was away) and the plan it learned, so the next call neither probes nor forgets."""
    limiter = backend.limiter("brave", rate=None, family="search", primary="search")
    await limiter.acquire()
    await limiter.change(lambda p: p.learned_as(20.0, 2))
    assert await book(backend, 5) == 5
    server.kill()
    assert await book(backend) == 6  # on memory
    server.start()
    took = await until_shared(backend)
    assert took < 5.0
    assert stored(server) >= 7
    snapshot = await limiter.snapshot()
    assert snapshot["plan_rate"] == 20.0 and snapshot["degraded"] is False


async def test_the_cache_is_bounded_by_our_own_entries_and_bytes(server: RedisServer) -> None:
    opened = await open_state(server.url, cache_max_entries=3, cache_max_bytes=100)
    try:
        for n in range(5):
            value = bytes([65 + n]) * 10
            assert await opened.cache.get_or_fetch(f"k{n}", _returns(value), 60) == (value, False)
            await opened.settle()
        stats = await opened.cache.stats()
        assert (stats["entries"], stats["bytes"], stats["max"]) == (3, 30, 3)
        assert (await opened.cache.get_or_fetch("k0", _returns(b"again"), 60))[1] is False  # evicted, oldest
        await opened.settle()
        assert (await opened.cache.get_or_fetch("k4", _returns(b"unused"), 60)) == (b"E" * 10, True)
        big = b"x" * 60
        await opened.cache.get_or_fetch("big1", _returns(big), 60)
        await opened.settle()
        stats = await opened.cache.stats()
        assert stats["bytes"] <= 100 and stats["entries"] <= 3
        await opened.cache.clear()
        assert (await opened.cache.stats())["entries"] == 0
    finally:
        await opened.aclose()


def _returns(value: bytes) -> Callable[[], Awaitable[bytes]]:
    async def fetch() -> bytes:
        return value

    return fetch


async def test_a_lease_is_renewed_only_by_its_holder(server: RedisServer) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(server.url)
    try:
        store = RedisStore(server.url, client)
        now = time.time()
        assert await store.cache_get_or_lease("q", "a", now, now + 1) == (None, True)
        assert await store.cache_renew("q", "a", now, now + 30) is True
        assert 29_000 < await client.pttl(lease_key("q")) <= 30_000
        assert await store.cache_renew("q", "b", now, now + 60) is False  # not b's
        assert await client.pttl(lease_key("q")) <= 30_000
    finally:
        await client.aclose()


async def test_an_outage_batch_is_added_once_per_token(server: RedisServer) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(server.url)
    try:
        store = RedisStore(server.url, client)
        now = time.time()
        await store.book(MONTH, None, now + 3600, now)
        epoch = await store.epoch()
        batch = Batch(delta=2, base=1, epoch=epoch, expires=now + 7200)
        assert await store.merge_count(MONTH, batch, now) == 3
        assert await store.merge_count(MONTH, batch, now) == 3  # sent again after a lost answer: not added twice
        assert 7_100_000 < await client.pttl(count_key(MONTH)) <= 7_200_000  # the longer expiry
        await client.flushdb()  # restarted empty: a new epoch; bookings refuse it until the counts are back...
        with pytest.raises(StoreUnavailable, match="lost this project's state"):
            await store.book(MONTH, None, now + 3600, now)
        # ...which puts back the latest base any process saw, once, plus every batch's bookings
        assert await store.merge_count(MONTH, Batch(delta=1, base=10, epoch=epoch, expires=now + 60), now) == 11
        assert await store.merge_count(MONTH, Batch(delta=1, base=12, epoch=epoch, expires=now + 60), now) == 14
        assert await store.merge_count(MONTH, Batch(delta=1, base=5, epoch=epoch, expires=now + 60), now) == 15
        assert await store.book(MONTH, None, now + 3600, now) == (True, 16)  # the new server's epoch, known now
        assert await store.epoch() != epoch
    finally:
        await client.aclose()


async def test_replicas_whose_clocks_disagree_share_one_window_on_the_servers_clock(server: RedisServer) -> None:
    """Two replicas, one clock 100 s ahead of the other: on their own clocks the one behind would start at once
    (or the one ahead wait 100 s); on the server's clock the second start waits the plan's window, 1/5 s."""
    from redis.asyncio import Redis

    client = Redis.from_url(server.url)
    try:
        ahead = RedisStore(server.url, client, clock=lambda: time.time() + 100.0)
        behind = RedisStore(server.url, client, clock=time.time)
        ask = Ask("brave", init=PlanState.known(5.0, 1))
        granted = await ahead.reserve(ask, time.time() + 100.0)
        assert granted.granted
        now = time.time()
        refused = await behind.reserve(ask, now)
        assert not refused.granted and 0.1 < refused.ready - now < 0.3, refused.ready - now
        pause_until = time.time() + 100.0 + 5.0  # the replica ahead is told to pause 5 s (its clock)
        await ahead.modify(ask, lambda p: p.blocked(pause_until))
        now = time.time()
        plan = await behind.modify(ask, lambda p: p)
        assert 4.5 < plan.blocked_until - now < 5.5  # 5 s on this replica's clock too
    finally:
        await client.aclose()


async def test_a_fake_clock_keeps_its_own_time(server: RedisServer, clock: FakeClock) -> None:
    """A backend opened with an injected clock (tests, simulations) is not moved to the server's clock."""
    opened = await open_state(server.url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        assert isinstance(opened, SharedBackend) and isinstance(opened.store, RedisStore)
        limiter = opened.limiter("brave", rate=5.0, burst=1)
        await limiter.acquire()
        await limiter.acquire()
        assert 0.2 <= clock() - 1000.0 < 0.3
    finally:
        await opened.aclose()
