"""Redis state for replicas, on a real redis-server: shared limits and cache; calls survive Redis dying."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import anyio
import pytest

from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.redis_keys import cache_key, record_key, starts_key
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.redis_server import RedisServer
from tests import state_contract as contract
from tests.test_state_memory import CASES

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """A running server with an empty database for each test."""
    if not redis_server.running:
        redis_server.start()
    import redis

    with redis.Redis.from_url(redis_server.url) as r:
        r.flushdb()
    return redis_server.url


@pytest.fixture
async def backend(redis_url: str, clock: FakeClock) -> AsyncIterator[StateBackend]:
    opened = await open_state(redis_url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    yield opened
    await opened.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
async def test_limiter_contract(
    case: Callable[[StateBackend, FakeClock], Awaitable[None]], backend: StateBackend, clock: FakeClock
) -> None:
    assert backend.name == "redis"
    await case(backend, clock)


@pytest.mark.anyio
async def test_cache_contract(backend: StateBackend) -> None:
    await contract.cache_single_flight(backend)
    await contract.cache_errors_not_stored(backend)
    await contract.records_round_trip(backend)


@pytest.mark.anyio
async def test_store_lease_then_value(backend: StateBackend, clock: FakeClock) -> None:
    assert isinstance(backend, SharedBackend)
    await contract.store_lease_then_value(backend.store, clock())


@pytest.mark.anyio
async def test_cached_values_and_records_carry_redis_ttls(backend: StateBackend, redis_url: str) -> None:
    async def fetch() -> bytes:
        return b"v"

    await backend.cache.get_or_fetch("web?q=ttl", fetch, 30.0)
    await backend.settle()  # the answer is stored beside the reply (state.later)
    await backend.records.put("breaker", {"state": "open"}, ttl=5.0)
    await backend.records.put("forever", {"state": "closed"})
    import redis

    with redis.Redis.from_url(redis_url) as r:
        assert 29_000 < r.pttl(cache_key("web?q=ttl")) <= 30_000
        assert 4_000 < r.pttl(record_key("breaker")) <= 5_000
        assert r.pttl(record_key("forever")) == -1  # no expiry


@pytest.mark.anyio
async def test_health_never_shows_the_password(redis_server: RedisServer) -> None:
    url = redis_server.url.replace("127.0.0.1", "user:s3cret-pw@127.0.0.1")
    opened = await open_state(url, cache_max_entries=10)
    try:
        health = opened.health()
        assert "s3cret-pw" not in str(health) and "user:***@127.0.0.1" in health["location"]
    finally:
        await opened.aclose()


@pytest.mark.anyio
async def test_redis_down_from_the_start_calls_still_work(clock: FakeClock) -> None:
    with RedisServer() as server:
        url = server.url
    # the server is gone now: nothing listens on that port
    opened = await open_state(url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        limiter = opened.limiter("brave", rate=20, burst=2)
        await limiter.acquire()

        async def fetch() -> bytes:
            return b"v"

        assert await opened.cache.get_or_fetch("k", fetch, 60) == (b"v", False)
        assert await opened.cache.get_or_fetch("k", fetch, 60) == (b"v", True)
        health = opened.health()
        assert health["degraded"] is True and "memory" in health["warning"]
        assert (await limiter.snapshot())["degraded"] is True
    finally:
        await opened.aclose()


@pytest.mark.anyio
async def test_redis_killed_and_restarted_mid_run() -> None:
    """Real time, small totals: calls succeed throughout; health goes degraded, then recovers by itself."""
    calls = 0

    async def fetch() -> bytes:
        nonlocal calls
        calls += 1
        return b"v%d" % calls

    with RedisServer() as server:
        opened = await open_state(server.url, cache_max_entries=10, retry_interval=0.2)
        try:
            limiter = opened.limiter("brave", rate=50, burst=5)
            await limiter.acquire()
            assert await opened.cache.get_or_fetch("k", fetch, 60) == (b"v1", False)
            assert opened.health()["degraded"] is False
            server.kill()
            started = time.monotonic()
            await limiter.acquire()
            assert (await opened.cache.get_or_fetch("k", fetch, 60))[0] == b"v2"  # memory fallback fetched
            assert time.monotonic() - started < 2.0  # a dead Redis costs little, not a hang
            assert opened.health()["degraded"] is True
            server.start()
            await anyio.sleep(0.25)
            await limiter.acquire()
            assert opened.health()["degraded"] is False
            assert await opened.cache.get_or_fetch("k2", fetch, 60) == (b"v3", False)
            assert await opened.cache.get_or_fetch("k2", fetch, 60) == (b"v3", True)
            assert (await limiter.snapshot())["degraded"] is False
        finally:
            await opened.aclose()


def test_two_processes_share_one_limiter(redis_url: str) -> None:
    import redis

    def granted() -> list[float]:
        with redis.Redis.from_url(redis_url) as r:
            return [score for _member, score in r.zrange(starts_key("brave|"), 0, -1, withscores=True)]

    contract.two_processes_share_one_limiter(redis_url, granted)


def test_process_killed_holding_the_lease_is_taken_over(redis_url: str) -> None:
    contract.killed_lease_holder_is_taken_over(redis_url)


def test_processes_asking_the_same_query_send_one_upstream_request(redis_url: str) -> None:
    contract.same_query_one_upstream_request(redis_url)
