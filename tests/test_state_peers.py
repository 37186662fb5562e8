"""Issue 44, the fleet with Redis killed and back: while the store is down each replica decides alone on its memory,
and at the full plan three replicas sent up to three times what Brave allows (12-22 x 429 in the fleet bench). A
replica counts the processes sharing the store while it answers (a heartbeat in Redis) and, degraded, grants its
share of the plan's window; the plan it keeps stays the full one, in force again as soon as the store is back."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio
import pytest
import redis

from brave_search_mcp.ratelimit.plan import PENALTY_FLOOR_RATE, Ask, PlanState, horizon
from brave_search_mcp.state import shared_cache, sqlite_conn
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.memory import MemorySlots
from brave_search_mcp.state.owed import Batch, OwedCounts
from brave_search_mcp.state.peers import ALIVE_SECONDS, BEAT_SECONDS, HOLD_SECONDS, Peers, share, share_limits
from brave_search_mcp.state.redis_keys import cache_key, count_key, peers_key
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.redis_server import RedisServer
from tests.test_state_sqlite_faults import stuck_writer

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
pytestmark = pytest.mark.anyio

PLAN = PlanState.known(50.0, 50)  # Brave's 50/s plan: 50 starts in one 1-second window
ASK = Ask("brave:key", "search", init=PLAN, primary="search")
RETRY = 1.0  # fake seconds


@contextlib.asynccontextmanager
async def replicas(server: RedisServer | str, clock: FakeClock, n: int) -> AsyncIterator[list[SharedBackend]]:
    """``n`` processes' backends on one Redis (or the state named by a URL), on one fake clock."""
    url = server if isinstance(server, str) else server.url
    async with contextlib.AsyncExitStack() as stack:
        opened = []
        for _ in range(n):
            backend = await open_state(url, cache_max_entries=10, clock=clock, sleep=clock.sleep, retry_interval=RETRY)
            assert isinstance(backend, SharedBackend)
            stack.push_async_callback(backend.aclose)
            opened.append(backend)
        yield opened


async def burst(backend: SharedBackend, clock: FakeClock, most: int = 200) -> tuple[int, float]:
    """Reservations at one instant until one is refused (bounded): how many were granted, and when the refused one
    may ask again (seconds from now)."""
    for granted in range(most):
        decision = await backend.slots.reserve(ASK, clock())
        if not decision.granted:
            return granted, decision.ready - clock()
    raise AssertionError(f"{most} granted at one instant")


async def beat_all(backends: list[SharedBackend], clock: FakeClock) -> None:
    """Each reserves once on the store, twice a beat apart: every one has read the others' beats."""
    for _ in range(2):
        for backend in backends:
            assert (await backend.slots.reserve(ASK, clock())).granted
        await clock.sleep(BEAT_SECONDS)


async def store_lost(backend: SharedBackend, clock: FakeClock, peers: int) -> None:
    """The first reservations after the store is lost: none until the window it kept has passed (it held the
    starts every process made, out of reach now: taken as full when the loss was found)."""
    granted, wait = await burst(backend, clock)
    assert backend.health()["degraded"] is True
    assert granted == 0 and wait == pytest.approx(horizon(*share_limits((50.0, 50), peers)), abs=1e-6)
    await clock.sleep(wait)


async def counted(backend: SharedBackend, clock: FakeClock) -> int:
    """The count of peers once a lower one has held (two beats ``HOLD_SECONDS`` apart)."""
    for _ in range(2):
        await clock.sleep(max(BEAT_SECONDS, HOLD_SECONDS))
        assert (await backend.slots.reserve(ASK, clock())).granted
    return backend.peers.count


async def back(backend: SharedBackend, clock: FakeClock, peers: int) -> None:
    """The first reservations once the store is back: for one window this process's share still (the starts the
    others made on memory meanwhile are not in the store: a Redis back empty has none), the first one the try that
    finds the store back."""
    granted, wait = await burst(backend, clock)
    assert backend.health()["degraded"] is False
    assert granted == share_limits((50.0, 50), peers)[1]
    await clock.sleep(wait)


async def on_its_share_until_redis_restarts(server: RedisServer, fleet: list[SharedBackend], clock: FakeClock) -> None:
    """Three replicas count each other, Redis is killed, the first grants its third of the window on memory, and
    Redis is started again (empty)."""
    await beat_all(fleet, clock)
    server.kill()
    await store_lost(fleet[0], clock, 3)
    assert (await burst(fleet[0], clock))[0] == 16
    server.start()


async def test_three_replicas_on_a_killed_redis_each_grant_a_third_of_the_window(clock: FakeClock) -> None:
    """Without the share each replica granted all 50 at once on its memory: 150 in Brave's 1-second window."""
    with RedisServer() as server:
        async with replicas(server, clock, 3) as fleet:
            await beat_all(fleet, clock)
            assert [b.peers.count for b in fleet] == [3, 3, 3]
            server.kill()
            for backend in fleet:
                await store_lost(backend, clock, 3)
                granted, wait = await burst(backend, clock)
                assert granted == 16  # 50 / 3, rounded down: 48 of 50 in the window for the three
                assert wait == pytest.approx(horizon(16.0, 16), abs=1e-6)  # the 17th waits for the window
                kept = backend.fallback.memory_slots.plan_of(ASK.own)
                assert kept == PLAN  # in full: it seeds a Redis that comes back empty
            server.start()  # back, empty
            await clock.sleep(RETRY + 1.2)
            await back(fleet[0], clock, 3)
            first, wait = await burst(fleet[0], clock)
            assert first == 50 and wait == pytest.approx(horizon(50.0, 50), abs=1e-6)  # the full plan, for all
            assert (await burst(fleet[1], clock))[0] == 0  # ...in one window: the store's ledger paces everyone


async def test_replicas_started_together_know_how_many_they_are_within_a_second(clock: FakeClock) -> None:
    """In the fleet bench Redis was killed 2 s after the replicas started: the first to beat had counted itself
    alone, and beating every 2 s it had not counted again, so it ran the whole plan on memory."""
    with RedisServer() as server:
        async with replicas(server, clock, 3) as fleet:
            counts = []
            for _ in range(3):
                for backend in fleet:
                    assert (await backend.slots.reserve(ASK, clock())).granted
                counts.append([b.peers.count for b in fleet])
                await clock.sleep(0.25)
            assert counts[0] == [1, 2, 3] and counts[1] == [3, 3, 3]


async def test_a_lost_store_is_taken_as_full_until_its_window_has_passed(clock: FakeClock) -> None:
    """In the fleet bench every 429 came in the first 0.3 s of the outage: the window was full of starts made on
    Redis, out of reach, and each replica started its share on top (counting its own starts was not enough: the
    busiest replica waited, the others filled the window past the plan)."""
    with RedisServer() as server:
        async with replicas(server, clock, 3) as fleet:
            await beat_all(fleet, clock)
            await clock.sleep(1.2)
            busy, idle, _ = fleet
            for _ in range(50):
                assert (await busy.slots.reserve(ASK, clock())).granted  # on Redis: the window is full
            await clock.sleep(0.5)
            server.kill()
            await store_lost(idle, clock, 3)  # found at once, by one that started nothing: waits all the same
            await clock.sleep(0.5)
            await store_lost(fleet[2], clock, 3)  # found later: taken as full from then


async def test_a_redis_back_empty_is_not_sent_the_starts_made_alone_on_top_of_them(clock: FakeClock) -> None:
    """A restarted Redis holds no start: while the starts a replica made on memory are in the window, its share
    still rules (else it started the whole plan again at once); after them, the store alone."""
    with RedisServer() as server:
        async with replicas(server, clock, 3) as fleet:
            await on_its_share_until_redis_restarts(server, fleet, clock)
            await clock.sleep(0.5)  # the store's next try is due
            granted, wait = await burst(fleet[0], clock)
            assert granted == 0 and wait == pytest.approx(horizon(16.0, 16) - 0.5, abs=1e-6)
            assert fleet[0].health()["degraded"] is True  # not asked: its share said no
            await clock.sleep(wait)
            await back(fleet[0], clock, 3)
            assert (await burst(fleet[0], clock))[0] == 50


async def test_a_store_found_back_by_another_call_keeps_the_share_for_a_window(clock: FakeClock) -> None:
    """A search looks in the cache before it reserves its start: whichever call finds Redis back, the reservations
    after it keep to the share for one window."""
    with RedisServer() as server:
        async with replicas(server, clock, 3) as fleet:
            await on_its_share_until_redis_restarts(server, fleet, clock)
            await clock.sleep(1.2)  # its own starts are out of the window; the others' may not be
            assert await fleet[0].cache.get_or_fetch("web?q=x", answer, 60.0) == (b"x", False)
            assert fleet[0].health()["degraded"] is False
            granted, wait = await burst(fleet[0], clock)
            assert granted == 16 and wait == pytest.approx(horizon(16.0, 16), abs=1e-6)


async def answer() -> bytes:
    return b"x"


async def test_a_replica_left_alone_gets_the_whole_plan_on_an_outage(clock: FakeClock) -> None:
    """The others stopped beating (stopped, or idle) longer than the span: they no longer take a share; one that
    closed cleanly leaves the set at once."""
    with RedisServer() as server:
        async with replicas(server, clock, 2) as fleet:
            leaving = await open_state(server.url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
            assert isinstance(leaving, SharedBackend)
            await beat_all([*fleet, leaving], clock)
            assert fleet[0].peers.count == 3
            await leaving.aclose()
            assert await counted(fleet[0], clock) == 2  # the closed one left; the idle one still counts
            await clock.sleep(ALIVE_SECONDS + 1.0)
            assert await counted(fleet[0], clock) == 1
            server.kill()
            await store_lost(fleet[0], clock, 1)
            assert (await burst(fleet[0], clock))[0] == 50


async def test_a_broken_heartbeat_set_never_fails_a_reservation_nor_counts_what_no_process_wrote(
    clock: FakeClock,
) -> None:
    with RedisServer() as server, redis.Redis.from_url(server.url) as r:
        async with replicas(server, clock, 1) as (backend,):
            r.set(peers_key(), "not a set")  # another type of key under the name
            assert (await backend.slots.reserve(ASK, clock())).granted
            assert backend.peers.count == 1 and backend.health()["degraded"] is False
            now = clock()
            r.zadd(
                peers_key(),
                {
                    "not a process id": now,
                    "f" * 31: now,
                    "b" * 32: now + 1e300,  # a time no clock reaches
                    "c" * 32: float("inf"),
                    "d" * 32: now - 1e6,  # long gone
                    "e" * 32: now - 1.0,  # a sound beat: another process
                },
            )
            await clock.sleep(BEAT_SECONDS)
            assert (await backend.slots.reserve(ASK, clock())).granted
            assert backend.peers.count == 2
            assert sorted(m.decode() for m in r.zrange(peers_key(), 0, -1)) == sorted(["e" * 32, backend.peers.member])


async def test_processes_on_one_sqlite_file_locked_by_another_each_grant_their_share(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stdio server per MCP client on one key: a file that refuses writes takes them all to memory at once."""
    monkeypatch.setattr(sqlite_conn, "LOCK_WAIT_SECONDS", 0.1)
    path = tmp_path / "s.db"
    async with replicas(f"sqlite://{path}", clock, 2) as pair:
        await beat_all(pair, clock)
        assert [b.peers.count for b in pair] == [2, 2]
        with stuck_writer(path):
            for backend in pair:
                await store_lost(backend, clock, 2)
                assert (await burst(backend, clock))[0] == 25
        await clock.sleep(RETRY + 1.2)
        await back(pair[0], clock, 2)
        assert (await burst(pair[0], clock))[0] == 50  # the file again: the full plan
        assert (await burst(pair[1], clock))[0] == 0  # ...for both together
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM peers").fetchone() == (0,)  # both left as they closed


async def test_rows_no_process_wrote_in_the_sqlite_heartbeat_are_not_counted(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "s.db"
    async with replicas(f"sqlite://{path}", clock, 1) as (backend,):
        assert (await backend.slots.reserve(ASK, clock())).granted
        now = clock()
        with sqlite3.connect(path) as conn:
            rows = [("x" * 32, now), ("A" * 32, now), (b"\x01" * 32, now), ("b" * 32, "soon"), ("c" * 32, 1e300)]
            rows += [("d" * 32, now - 1e6), ("e" * 32, now - 1.0)]
            conn.executemany("INSERT INTO peers VALUES (?, ?)", rows)
        await clock.sleep(BEAT_SECONDS)
        assert (await backend.slots.reserve(ASK, clock())).granted
        assert backend.peers.count == 2  # itself and the sound "e..." beat
        assert backend.health()["degraded"] is False


def fetcher(fetched: list[str], answer: str) -> Callable[[], Awaitable[bytes]]:
    """A fetch of ``answer`` that notes it was made (an upstream request)."""

    async def run() -> bytes:
        fetched.append(answer)
        return answer.encode()

    return run


async def test_answers_fetched_during_an_outage_are_stored_once_redis_is_back(clock: FakeClock) -> None:
    """In the fleet bench a third of the duplicate upstream requests came after Redis was back: a replica had fetched
    the answer on its memory, and the one asked next fetched it again from Brave."""
    fetched: list[str] = []
    fetch = partial(fetcher, fetched)

    with RedisServer() as server:
        async with replicas(server, clock, 2) as (first, second):
            server.kill()
            assert await first.cache.get_or_fetch("web?q=x", fetch("x"), 60.0) == (b"x", False)
            assert first.health()["degraded"] is True
            server.start()  # back, empty
            await clock.sleep(RETRY)
            assert await first.cache.get_or_fetch("web?q=y", fetch("y"), 60.0) == (b"y", False)
            await first.settle()
            assert first.health()["degraded"] is False
            assert await second.cache.get_or_fetch("web?q=x", fetch("again"), 60.0) == (b"x", True)
            with redis.Redis.from_url(server.url) as r:
                assert 58_000 < r.pttl(cache_key("web?q=x")) <= 59_000  # its 60 s from when it was fetched
    assert fetched == ["x", "y"]


async def test_bookings_that_meet_a_redis_back_empty_while_the_outage_is_added_count_once(clock: FakeClock) -> None:
    """Bookings at once as a Redis restarted empty is found back: one adds the outage's batch, another meets the new
    server's epoch first and begins another outage; every request is counted once."""
    month = "brave:key|:month:2026-11"

    async def book() -> None:
        await backend.slots.book(month, None, clock() + 86400, clock())

    with RedisServer() as server, redis.Redis.from_url(server.url) as r:
        async with replicas(server, clock, 1) as (backend,):
            for _ in range(10):
                await book()
            server.kill()
            for _ in range(5):
                await book()  # on memory
            server.start()  # back, empty
            await clock.sleep(RETRY)
            await backend.cache.get_or_fetch("web?q=x", answer, 60.0)  # a search looks in the cache first
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(book)
            await clock.sleep(RETRY)
            await book()  # what is still owed goes in first
            assert backend.health()["degraded"] is False
            assert int(r.get(count_key(month)) or 0) == 19


async def test_an_outage_that_begins_while_a_batch_is_being_added_puts_back_no_base_twice() -> None:
    """In the fleet bench the month's count now and then ended 39-57 above the requests billed: a booking sent while
    the outage's batch was on its way met the new server's epoch and began another outage, whose batch took memory's
    count (which held the first batch's bookings) as its base; the server put that base back, counting them twice."""
    owed = OwedCounts()
    stored = {"n": 0, "put_back": 0}

    async def merge(counter: str, batch: Batch) -> int:  # the server's merge script, on a server that lost its count
        if batch is first:
            owed.start(counter, 15, "old", 0.0)  # another call fails meanwhile: an outage begins, memory counts 15
            owed.add(counter, 1, 0.0)
        stored["n"] += batch.delta + max(0, batch.base - stored["put_back"])
        stored["put_back"] = max(stored["put_back"], batch.base)
        return stored["n"]

    owed.start("month", 10, "old", 0.0)  # the outage began at 10
    owed.add("month", 5, 0.0)
    first = owed.pending()[0][1]
    await owed.repay(merge, lambda counter, n, expires: None)
    assert stored["n"] == 16 and not owed


class Answers:
    """A heartbeat that answers what it is given (a store this version cannot read), or fails."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)

    async def beat(self, member: str, now: float, alive: float) -> int:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    async def leave(self, member: str) -> None:
        raise ConnectionError("down")


async def test_a_count_no_fleet_has_is_not_used(clock: FakeClock) -> None:
    peers = Peers(Answers(4, RuntimeError("down"), "4", 0, -3, 10**9, True), clock=clock)
    counts = []
    for _ in range(7):
        await peers.beat()
        counts.append(peers.count)
        await peers.beat()  # within the period: no beat
        await clock.sleep(HOLD_SECONDS)
    assert counts == [4, 4, 4, 1, 1, 1, 1]  # a failed beat keeps the last count; a count no fleet has is 1
    await peers.leave()  # a failure to leave is no failure of the process


async def test_a_lower_count_is_believed_once_it_has_held_a_while(clock: FakeClock) -> None:
    """A Redis restarted empty counts the first process to beat alone: the others beat again within seconds."""
    peers = Peers(Answers(3, 1, 2, 3, 1, 2, 2, 2, 2), clock=clock)
    counts = []
    for _ in range(9):
        await peers.beat()
        counts.append(peers.count)
        await clock.sleep(BEAT_SECONDS)
    assert counts == [3, 3, 3, 3, 3, 3, 3, 2, 2]  # lower from the fifth beat on: believed 6 s later


def test_a_share_divides_rate_and_burst_within_the_plans_bounds() -> None:
    assert share(PLAN, 1) is PLAN
    third = share(PLAN, 3)
    assert (third.plan_rate, third.plan_burst) == (16.0, 16)  # the window keeps its 1 s: 48/s for the three
    rate, burst = share_limits((10.0, 2), 3)
    assert rate == pytest.approx(10.0 / 3) and burst == 1  # a burst below the peers: 1, and a third of the rate
    small = share(PlanState.known(1.0, 1), 3)
    assert (small.plan_rate, small.plan_burst) == (PENALTY_FLOOR_RATE, 1)  # the floor, a whole start
    tiny = share(PlanState.known(0.2, 1), 4)
    assert tiny.plan_rate == 0.2  # never above the plan
    penalised = share(PlanState.known(50.0, 50).penalized(0.0), 5)
    assert penalised.penalty_rate == pytest.approx(5.0)  # a halved 25/s shared as the plan: 10 of 50
    assert share(PlanState.unknown(), 3) == PlanState.unknown()  # the probe stays one request


async def test_memory_decides_on_the_share_and_keeps_the_full_plan(clock: FakeClock) -> None:
    slots = MemorySlots(clock=clock)
    pinned = Ask("brave:key", "search", init=PLAN, primary="search", pinned=(20.0, 20))
    granted = 0
    while (await slots.reserve(pinned, clock(), peers=4)).granted and granted < 100:
        granted += 1
    assert granted == 5  # an explicit setting is the key's rate too: shared
    assert slots.plan_of(pinned.own) == PLAN


async def test_answers_kept_for_the_store_s_return_are_the_newest_within_the_byte_bound(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outage of an hour fetches many answers on memory: the ones kept to be stored once the store is back are
    bounded in bytes (the newest kept), so a long outage never grows the process without bound."""
    monkeypatch.setattr(shared_cache, "MAX_UNSTORED_BYTES", 5)
    fetched: list[str] = []
    fetch = partial(fetcher, fetched)

    with RedisServer() as server:
        async with replicas(server, clock, 2) as (first, second):
            server.kill()
            for name in ("aa", "bb", "cc"):
                await first.cache.get_or_fetch(f"web?q={name}", fetch(name), 60.0)
            server.start()
            await clock.sleep(RETRY)
            await first.cache.get_or_fetch("web?q=new", fetch("new"), 60.0)
            await first.settle()
            for name in ("aa", "bb", "cc"):
                await second.cache.get_or_fetch(f"web?q={name}", fetch(f"{name} again"), 60.0)
    assert fetched == ["aa", "bb", "cc", "new", "aa again"]  # 6 bytes over the bound of 5: the oldest went
