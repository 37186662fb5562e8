"""Issue 36 item 3, in one process on a fake clock: an outage of the shared store loses nothing.

Calls meanwhile run on memory at the plan last learned and count on from the month's count the store last gave;
those counts reach the store once it answers again, exactly once, even when the store lost its own counts
meanwhile; one call at a time tries a store that is down; any failure inside the store degrades a call, never fails
it. The store is a real SQLite file behind ``Flaky``, which fails every operation on command.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from brave_search_mcp.state.base import StateBackend, StateOptions, StoreUnavailable
from brave_search_mcp.state.journal import Journal
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend, Store
from testkit.clock import FakeClock

pytestmark = pytest.mark.anyio

RETRY = 5.0
MONTH = "brave:key|:month:2026-11"
EXPIRES = 10**10


class Flaky:
    """A store that fails on command: ``fault`` (raised by every operation while set), ``lose`` (operations that
    succeed but whose answer is lost once), ``hold`` (an event every operation waits on first, while set)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.dropped = inner.dropped
        self.fault: Exception | None = None
        self.lose: set[str] = set()
        self.hold: anyio.Event | None = None
        self.tries: Counter[str] = Counter()

    def location(self) -> str:
        return self.inner.location()

    def cache_location(self) -> str:
        return self.inner.cache_location()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def total(self) -> int:
        """Operations tried on the store."""
        return sum(self.tries.values())

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        op = getattr(self.inner, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            self.tries[name] += 1
            if self.hold is not None:
                await self.hold.wait()
            if self.fault is not None:
                raise self.fault
            result = await op(*args, **kwargs)
            if name in self.lose:
                self.lose.discard(name)
                raise StoreUnavailable("the answer was lost")
            return result

        return run


@asynccontextmanager
async def flaky(
    path: Path, clock: FakeClock, journal: Journal | None = None
) -> AsyncIterator[tuple[SharedBackend, Flaky]]:
    """A backend on the SQLite file ``path`` whose store fails on command (keeping ``journal``, if given)."""
    opened = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    assert isinstance(opened, SharedBackend)
    store = Flaky(opened.store)
    options = StateOptions(10, clock, clock.sleep, retry_interval=RETRY)
    backend = SharedBackend("sqlite", cast(Store, store), options, journal=journal)
    try:
        yield backend, store
    finally:
        await backend.aclose()


@asynccontextmanager
async def plain(path: Path, clock: FakeClock) -> AsyncIterator[StateBackend]:
    """Another process on the same file."""
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        yield backend
    finally:
        await backend.aclose()


async def book(backend: StateBackend, clock: FakeClock, n: int = 1, cap: int | None = None) -> list[int]:
    """``n`` bookings; the count after each (its negative when refused by ``cap``)."""
    counts = []
    for _ in range(n):
        booked, count = await backend.slots.book(MONTH, cap, EXPIRES, clock())
        counts.append(count if booked else -count)
    return counts


async def test_an_outage_runs_at_the_plan_another_process_learned_not_a_probe(tmp_path: Path, clock: FakeClock) -> None:
    """A process that only ever read the plan from the store (another one learned it) keeps pacing at it while the
    store is down: one start per 0.1 s at 10/s, where a process starting from nothing would probe and hold."""
    async with plain(tmp_path / "s.db", clock) as first, flaky(tmp_path / "s.db", clock) as (second, store):
        learner = first.limiter("brave", rate=None, family="search", primary="search")
        await learner.acquire()  # the probe
        await learner.change(lambda p: p.learned_as(10.0, 1))  # its answer's headers: 10/s
        await clock.sleep(1.0)
        limiter = second.limiter("brave", rate=None, family="search", primary="search")
        await limiter.acquire()  # no probe: the store has the plan
        store.fault = StoreUnavailable("down")
        starts = []
        for _ in range(4):
            await limiter.acquire()
            starts.append(clock())
        assert second.health()["degraded"] is True
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(0.09 <= gap <= 0.12 for gap in gaps), gaps


async def test_counts_made_during_an_outage_are_added_when_the_store_returns(tmp_path: Path, clock: FakeClock) -> None:
    """Three counted in the store, two on memory during an outage (counting on from three), one by another process
    meanwhile: once the store answers again it holds all seven."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store), plain(tmp_path / "s.db", clock) as other:
        assert await book(backend, clock, 3) == [1, 2, 3]
        store.fault = StoreUnavailable("down")
        assert await book(backend, clock, 2) == [4, 5]  # on memory, on from the store's count
        assert await book(other, clock) == [4]  # the store meanwhile
        store.fault = None
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [7]  # the outage's two went first
        assert await other.slots.count(MONTH, clock()) == 7
        assert backend.health()["degraded"] is False


async def test_an_outage_count_whose_answer_was_lost_is_added_once(tmp_path: Path, clock: FakeClock) -> None:
    """The store added the outage's batch but its answer never came: sent again, it is not added twice."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock, 3)
        store.fault = StoreUnavailable("down")
        await book(backend, clock, 2)
        store.fault = None
        store.lose.add("merge_count")
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [6]  # on memory again: the store seemed down
        assert store.tries["merge_count"] == 1
        await clock.sleep(RETRY)
        assert await backend.slots.count(MONTH, clock()) == 6
        assert store.tries["merge_count"] == 3  # the lost batch once more (a no-op), then the one booked meanwhile


async def test_a_store_that_lost_its_counts_is_raised_to_what_this_process_knew(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A store that comes back empty (a Redis restarted without persistence; here the file's rows deleted, its
    epoch with them) gets back the count each process last saw, the latest of them, plus what each counted
    meanwhile: the spending cap forgets nothing a process knew."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store), flaky(tmp_path / "s.db", clock) as (other, down):
        await book(backend, clock, 3)
        await book(other, clock, 2)  # 5: this one saw the later count
        store.fault = down.fault = StoreUnavailable("down")
        await book(backend, clock, 2)
        await book(other, clock, 1)
        with sqlite3.connect(tmp_path / "s.db") as wipe:
            wipe.execute("DELETE FROM counters")
            wipe.execute("DELETE FROM records")
        store.fault = down.fault = None
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [3 + 2 + 1]  # its own base, 3, and its two; the other's one is owed
        assert await book(other, clock) == [5 + 2 + 1 + 1 + 1]  # the later base, 5: every booking is there once


async def test_the_spending_cap_holds_through_an_outage(tmp_path: Path, clock: FakeClock) -> None:
    """Four of a cap of five used in the store: during an outage one more is allowed, not five."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock, 4, cap=5)
        store.fault = StoreUnavailable("down")
        assert await book(backend, clock, 2, cap=5) == [5, -5]


async def test_a_count_given_back_during_an_outage_is_given_back_in_the_store(tmp_path: Path, clock: FakeClock) -> None:
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock, 3)
        store.fault = StoreUnavailable("down")
        await book(backend, clock, 2)
        await backend.slots.unbook(MONTH)  # not answered: not billed
        store.fault = None
        await clock.sleep(RETRY)
        assert await backend.slots.count(MONTH, clock()) == 4


async def test_one_call_at_a_time_tries_a_store_that_is_down(tmp_path: Path, clock: FakeClock) -> None:
    """At the retry time five calls arrive together while the store hangs: one tries it, the other four answer from
    memory at once instead of each waiting out the store's timeout."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        await book(backend, clock, 2)
        store.fault = StoreUnavailable("down")
        assert await backend.slots.count(MONTH, clock()) == 2  # from memory: the store is down
        await clock.sleep(RETRY)
        store.tries.clear()
        store.hold = anyio.Event()
        answered: list[int] = []

        async def count() -> None:
            answered.append(await backend.slots.count(MONTH, clock()))

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(count)
            await anyio.wait_all_tasks_blocked()
            assert store.total() == 1 and answered == [2, 2, 2, 2]  # four from memory already
            store.hold.set()
        assert answered == [2] * 5 and store.total() == 1


async def test_any_failure_inside_the_store_degrades_the_call_with_one_logged_trace(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only the failures a backend names: a bug, or an answer this version cannot read, serves the call from
    memory; the status names it; one error line with its trace is logged for the whole outage."""
    async with flaky(tmp_path / "s.db", clock) as (backend, store):
        limiter = backend.limiter("brave", rate=100.0, burst=1)
        await limiter.acquire()
        store.fault = RuntimeError("the store answered nonsense")
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                await limiter.acquire()
            assert await backend.cache.get_or_fetch("k", _answer(b"v"), 60) == (b"v", False)
            assert await book(backend, clock) == [1]
        health = backend.health()
        assert health["degraded"] is True and "RuntimeError: the store answered nonsense" in health["warning"]
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and errors[0].exc_info is not None


def _answer(value: bytes) -> Callable[[], Awaitable[bytes]]:
    async def fetch() -> bytes:
        return value

    return fetch
