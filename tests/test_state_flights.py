"""Cross-replica single flight on a real redis-server: a waiter is woken by Redis when the owner's answer is stored
(issue 44), not by polling; the write it waits on is never deferred."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.lowlevel
import pytest

from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.redis import RedisStore
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.state.shared_cache import SharedStoreCache
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.redis_server import RedisServer

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[tuple[SharedBackend, SharedBackend, FakeClock]]:
    """Two replicas' backends on one Redis: the owner's on real time (its lease renewals sleep for real), the
    waiter's on a fake clock whose sleeps a poll would show."""
    import redis

    with redis.Redis.from_url(redis_server.url) as r:
        r.flushdb()
    clock = FakeClock()
    one = await open_state(redis_server.url, cache_max_entries=10)
    two = await open_state(redis_server.url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    assert isinstance(one, SharedBackend) and isinstance(two, SharedBackend)
    try:
        yield one, two, clock
    finally:
        await one.aclose()
        await two.aclose()


class Looks:
    """Counts a replica's single-flight looks (get-or-lease) and waits in Redis, passing them on."""

    def __init__(self, backend: SharedBackend) -> None:
        store = backend.store
        assert isinstance(store, RedisStore)
        self.looks = self.waits = 0
        get_or_lease, wait = store.cache_get_or_lease, store.cache_wait

        async def counted_look(key: str, owner: str, now: float, until: float) -> tuple[bytes | None, bool]:
            self.looks += 1
            return await get_or_lease(key, owner, now, until)

        async def counted_wait(key: str, seconds: float) -> None:
            self.waits += 1
            await wait(key, seconds)

        store.cache_get_or_lease = counted_look  # type: ignore[method-assign]
        store.cache_wait = counted_wait  # type: ignore[method-assign]


async def test_a_waiter_on_another_replica_is_woken_by_the_store_not_by_polling(
    replicas: tuple[SharedBackend, SharedBackend, FakeClock],
) -> None:
    one, two, clock = replicas
    assert isinstance(two.cache, SharedStoreCache)
    two.cache.wait_seconds = 30.0  # one wait far longer than this test: only the owner's store can end it
    watched = Looks(two)
    release = anyio.Event()
    got: list[tuple[bytes, bool]] = []

    async def owner_fetch() -> bytes:
        await release.wait()
        return b"answer"

    async def waiter() -> None:
        got.append(await two.cache.get_or_fetch("web?q=shared", _duplicate, 60))

    with anyio.fail_after(10):
        async with one.owned(), anyio.create_task_group() as tg:  # the owner's writes run in its lifespan's group
            tg.start_soon(one.cache.get_or_fetch, "web?q=shared", owner_fetch, 60)
            for _ in range(1000):  # bounded: until the owner holds the lease
                if _leased(one):
                    break
                await anyio.sleep(0.001)
            tg.start_soon(waiter)
            for _ in range(1000):  # bounded: until the waiter blocks in Redis
                if watched.waits:
                    break
                await anyio.sleep(0.001)
            release.set()
    assert got == [(b"answer", True)]
    assert (watched.looks, watched.waits) == (2, 1)  # looked, waited once, woke, looked again: the answer
    assert clock.sleeps == [] and two.cache.polls == 0  # no poll, no back-off sleep


def _leased(backend: SharedBackend) -> bool:
    """Whether the owner's flight has taken its lease (it counts a miss once it has)."""
    assert isinstance(backend.cache, SharedStoreCache)
    return backend.cache.misses == 1


async def _duplicate() -> bytes:
    raise AssertionError("the waiter fetched: single flight failed")


async def test_a_waiter_whose_owner_failed_takes_the_lease_at_once(
    replicas: tuple[SharedBackend, SharedBackend, FakeClock],
) -> None:
    """The owner's fetch fails: nothing is stored, the lease goes and the waiter is woken to fetch itself."""
    one, two, _ = replicas
    assert isinstance(two.cache, SharedStoreCache)
    two.cache.wait_seconds = 30.0
    release = anyio.Event()
    outcomes: list[object] = []

    async def failing() -> bytes:
        await release.wait()
        raise RuntimeError("upstream down")

    async def owner() -> None:
        with pytest.raises(RuntimeError):
            await one.cache.get_or_fetch("web?q=failed", failing, 60)
        outcomes.append("owner failed")

    async def fetched() -> bytes:
        return b"own answer"

    async def waiter() -> None:
        outcomes.append(await two.cache.get_or_fetch("web?q=failed", fetched, 60))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(owner)
            for _ in range(1000):
                if _leased(one):
                    break
                await anyio.sleep(0.001)
            watched = Looks(two)
            tg.start_soon(waiter)
            for _ in range(1000):
                if watched.waits:
                    break
                await anyio.sleep(0.001)
            release.set()
    assert outcomes == ["owner failed", (b"own answer", False)]
    assert (watched.looks, watched.waits, two.cache.polls) == (2, 1, 0)  # woken by the lease's end, not a poll
