"""Issue 44, "Redis faults as Redis clients expect": after a failure the store is tried again 0.25 s later, then every
half second for the first 5 s of the outage, then each next try twice as long after the last, up to the retry
interval, so a store back within a couple of seconds is used again within half a second; a failure first gets one
more try (redis-py's own Retry) before the store counts as down; connecting has a timeout of its own, generous
enough for a busy event loop."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import anyio
import pytest

from brave_search_mcp.state.base import StateBackend, StoreUnavailable
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.redis_client import COMMAND_TIMEOUT_SECONDS, CONNECT_TIMEOUT_SECONDS, client_options
from testkit.clock import FakeClock
from testkit.redis_server import RedisServer, redis_server_binary
from tests.test_state_outage import MONTH, RETRY, book, flaky

pytestmark = pytest.mark.anyio

STEP = 0.125
needs_redis = pytest.mark.skipif(redis_server_binary() is None, reason="redis-server is not installed here")


async def test_a_store_that_is_down_is_tried_after_a_quarter_second_then_each_half_second_then_doubling(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock)
        start = clock()
        store.fault = StoreUnavailable("down")
        tried: list[float] = []
        for _ in range(104):  # a call every 0.125 s (exact in binary, as every wait here) for 13 s
            before = store.total()
            await backend.slots.count(MONTH, clock())
            if store.total() != before:
                tried.append(round(clock() - start, 2))
            await clock.sleep(STEP)
        early = [0.0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4.25, 4.75, 5.25]  # 0.25, then 0.5 until 5 s
        assert tried == [*early, 5.75, 6.75, 8.75, 12.75]  # then 1, 2, 4, then the interval: 5 s
        store.fault = None
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [2]  # back: it holds the one counted meanwhile too
        store.fault = StoreUnavailable("down again")
        start, tried = clock(), []
        for _ in range(8):
            before = store.total()
            await backend.slots.count(MONTH, clock())
            if store.total() != before:
                tried.append(round(clock() - start, 2))
            await clock.sleep(STEP)
        assert tried == [0.0, 0.25, 0.75]  # a new outage starts from a quarter second again


async def test_a_store_back_within_two_seconds_is_used_again_within_half_a_second(
    tmp_path: Path, clock: FakeClock
) -> None:
    """With the 5 s interval alone, calls ran on memory 3 s after the store was back; doubling waits, 1.75 s."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock)
        store.fault = StoreUnavailable("down")
        start = clock()
        await book(backend, clock)
        while clock() - start < 2.0:
            await clock.sleep(STEP)
            await book(backend, clock)
        store.fault = None
        while backend.health()["degraded"]:
            assert clock() - start < 5.0, "still on memory"
            await clock.sleep(STEP)
            await book(backend, clock)
        assert clock() - start == 2.25


async def test_a_store_that_keeps_failing_soon_after_it_returns_is_warned_of_once(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk still reads: each quick try brings the store back, the next write takes it down again. With a try
    every quarter second that logged a warning per relapse (5 for 2 replicas in the fault suite)."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock)
        with caplog.at_level(logging.INFO, logger="brave_search_mcp.state.guard"):
            for _ in range(6):  # down, back at the next try, down again at once: six relapses within 2 s
                store.fault = StoreUnavailable("disk full")
                await book(backend, clock)
                store.fault = None
                await clock.sleep(0.25)
                await book(backend, clock)
        downs = [r for r in caplog.records if "unavailable (" in r.getMessage()]
        assert len(downs) == 6 and [r.levelno for r in downs] == [logging.WARNING] + [logging.INFO] * 5
        store.fault = StoreUnavailable("down much later")
        await clock.sleep(RETRY)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="brave_search_mcp.state.guard"):
            await book(backend, clock)
        assert [r.levelno for r in caplog.records if "unavailable (" in r.getMessage()] == [logging.WARNING]


def test_redis_clients_connect_with_a_timeout_of_their_own_and_try_once_more() -> None:
    options = client_options()
    assert options["socket_connect_timeout"] == CONNECT_TIMEOUT_SECONDS > 0.5  # a busy event loop answers late
    assert options["socket_timeout"] == COMMAND_TIMEOUT_SECONDS
    from redis.asyncio.retry import Retry

    assert isinstance(options["retry"], Retry)  # the asyncio one: the sync Retry never retried an async command


@needs_redis
async def test_a_redis_killed_and_back_two_seconds_later_is_used_again_before_the_retry_interval() -> None:
    """A real redis-server, killed (connections reset, connecting refused), started again 2 s later on the same
    port: the replica uses it again well within the 5 s interval, and the count it kept meanwhile reaches it."""
    with RedisServer() as server:
        backend: StateBackend = await open_state(server.url, cache_max_entries=10, retry_interval=5.0)
        try:
            assert await _book(backend) == 1
            server.kill()
            killed = time.monotonic()
            assert await _book(backend) == 2  # one more try, then memory
            assert backend.health()["degraded"] is True
            while time.monotonic() - killed < 2.0:  # bounded: 2 s
                await anyio.sleep(0.05)
                await _book(backend)
            server.start()
            while backend.health()["degraded"]:  # bounded: the assertion below
                assert time.monotonic() - killed < 4.6, "still on memory: the 5 s interval, not the probes"
                await anyio.sleep(0.05)
                await _book(backend)
            assert await backend.slots.count(MONTH, time.time()) >= 3
        finally:
            await backend.aclose()


async def _book(backend: StateBackend) -> int:
    return (await backend.slots.book(MONTH, None, time.time() + 86400, time.time()))[1]


@needs_redis
async def test_a_connection_the_server_dropped_is_tried_once_more_and_the_store_stays_in_use() -> None:
    """``CLIENT KILL`` of the replica's pooled connection (a server restart, a proxy's idle timeout): the next
    command fails on the dead socket, redis-py tries it once more on a new connection, and the call stays shared."""
    import redis

    with RedisServer() as server:
        backend: StateBackend = await open_state(server.url, cache_max_entries=10)
        try:
            assert await _book(backend) == 1
            with redis.Redis.from_url(server.url) as r:
                assert r.client_kill_filter(_type="normal", skipme=True) == 1
            assert await _book(backend) == 2
            assert backend.health()["degraded"] is False, backend.health()
        finally:
            await backend.aclose()
