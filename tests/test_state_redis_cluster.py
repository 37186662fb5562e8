"""Issue 44, "Redis Cluster": the state contract suite that memory, SQLite and one redis-server pass, on a real
three-master Redis Cluster (``redis-server --cluster-enabled yes`` on three loopback ports, joined by ``redis-cli
--cluster create``), reached through ``redis+cluster://`` and any one node. Every script is handed its keys and the
keys of one script share a hash slot (a cluster refuses a script whose keys span slots: CROSSSLOT)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from brave_search_mcp.ratelimit.plan import Ask, PlanState
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.peers import BEAT_SECONDS
from brave_search_mcp.state.redis_keys import (
    CACHE_KEYS,
    EPOCH_KEY,
    cache_key,
    count_key,
    lease_key,
    merged_key,
    peers_key,
    plan_key,
    restored_key,
    starts_key,
)
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.redis_cluster import RedisClusterServers, redis_cluster_unavailable
from tests import state_contract as contract
from tests.test_state_epoch import COUNTER, book
from tests.test_state_memory import CASES
from tests.test_state_outage import RETRY

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
require("redis-cli", ".ci/run installs it with redis-server (the redis-tools package)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterServers]:
    if redis_cluster_unavailable() is not None:
        pytest.skip(redis_cluster_unavailable() or "")
    with RedisClusterServers() as started:
        yield started


@pytest.fixture
def cluster_url(cluster: RedisClusterServers) -> str:
    """The cluster, every node emptied, for each test."""
    cluster.flush()
    return cluster.url


@pytest.fixture
async def backend(cluster_url: str, clock: FakeClock) -> AsyncIterator[StateBackend]:
    opened = await open_state(cluster_url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    yield opened
    await opened.aclose()


def test_every_scripts_keys_share_one_hash_slot() -> None:
    from redis.crc import key_slot

    state = [plan_key("a|search"), starts_key("a|search"), plan_key("a|"), starts_key("a|"), count_key(COUNTER)]
    state += [merged_key("t"), restored_key(COUNTER), EPOCH_KEY, peers_key()]
    cache = [cache_key("web?q=x"), lease_key("web?q=x"), *CACHE_KEYS]
    assert len({key_slot(k.encode()) for k in state}) == 1
    assert len({key_slot(k.encode()) for k in cache}) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
async def test_limiter_contract(
    case: Callable[[StateBackend, FakeClock], Awaitable[None]], backend: StateBackend, clock: FakeClock
) -> None:
    assert backend.name == "redis" and backend.health()["degraded"] is False
    await case(backend, clock)
    assert backend.health()["degraded"] is False  # every script ran: none was refused as CROSSSLOT


@pytest.mark.anyio
async def test_replicas_count_each_other_on_a_cluster(cluster_url: str, clock: FakeClock) -> None:
    """The heartbeat that sets each replica's share of the plan during an outage (``state.peers``) runs there too."""
    ask = Ask("brave:key", "search", init=PlanState.known(50.0, 50), primary="search")
    pair = [await open_state(cluster_url, cache_max_entries=10, clock=clock, sleep=clock.sleep) for _ in range(2)]
    try:
        for _ in range(2):
            for backend in pair:
                assert (await backend.slots.reserve(ask, clock())).granted
            await clock.sleep(BEAT_SECONDS)
        assert [b.peers.count for b in pair if isinstance(b, SharedBackend)] == [2, 2]
    finally:
        for backend in pair:
            await backend.aclose()


@pytest.mark.anyio
async def test_cache_contract(backend: StateBackend) -> None:
    await contract.cache_single_flight(backend)
    await contract.cache_errors_not_stored(backend)
    await contract.records_round_trip(backend)
    await backend.settle()  # the answers are stored after the reply (state.later)
    await backend.cache.clear()
    assert (await backend.cache.stats())["entries"] == 0
    assert backend.health()["degraded"] is False


@pytest.mark.anyio
async def test_the_cache_evicts_past_its_bound_on_a_cluster(cluster_url: str, clock: FakeClock) -> None:
    opened = await open_state(cluster_url, cache_max_entries=2, clock=clock, sleep=clock.sleep)
    try:
        for n in range(4):

            async def fetch(n: int = n) -> bytes:
                return b"v%d" % n

            await opened.cache.get_or_fetch(f"k{n}", fetch, 60)
        await opened.settle()
        assert (await opened.cache.stats())["entries"] == 2
        assert opened.health()["degraded"] is False
    finally:
        await opened.aclose()


@pytest.mark.anyio
async def test_store_lease_then_value(backend: StateBackend, clock: FakeClock) -> None:
    assert isinstance(backend, SharedBackend)
    await contract.store_lease_then_value(backend.store, clock())


@pytest.mark.anyio
async def test_an_outage_count_reaches_the_cluster_once(backend: StateBackend, clock: FakeClock) -> None:
    """The epoch and merge scripts (four keys each) on the cluster: an outage's bookings are added once."""
    from brave_search_mcp.state.base import StateOptions, StoreUnavailable
    from tests.test_state_outage import Flaky

    assert isinstance(backend, SharedBackend)
    store = Flaky(backend.store)
    shared = SharedBackend("redis", store, StateOptions(10, clock, clock.sleep, retry_interval=RETRY))  # type: ignore[arg-type]
    assert await book(shared, clock, 2) == [1, 2]
    store.fault = StoreUnavailable("down")
    assert await book(shared, clock, 2) == [3, 4]
    store.fault = None
    await clock.sleep(RETRY)
    assert await book(shared, clock) == [5]
    assert await backend.slots.count(COUNTER, clock()) == 5


def test_two_processes_share_one_limiter(cluster_url: str) -> None:
    import redis
    from redis.cluster import RedisCluster

    def granted() -> list[float]:
        with RedisCluster.from_url(cluster_url.replace("redis+cluster", "redis")) as r:
            found = r.zrange(starts_key("brave|"), 0, -1, withscores=True)
            assert isinstance(found, list)
            return [score for _member, score in found]

    assert redis is not None
    contract.two_processes_share_one_limiter(cluster_url, granted)


def test_processes_asking_the_same_query_send_one_upstream_request(cluster_url: str) -> None:
    contract.same_query_one_upstream_request(cluster_url)
