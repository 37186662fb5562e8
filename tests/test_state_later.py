"""A miss's answer is stored after the reply (``state.later``): never lost, never a failed call, settled at close."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from brave_search_mcp.state.later import Later
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock

pytestmark = pytest.mark.anyio


async def _open(path: Path, clock: FakeClock) -> SharedBackend:
    backend = await open_state(f"sqlite://{path}", clock=clock, sleep=clock.sleep, cache_max_entries=100)
    assert isinstance(backend, SharedBackend)
    return backend


async def _value(data: bytes) -> bytes:
    return data


async def test_a_miss_returns_before_its_answer_is_stored_and_close_stores_it(tmp_path: Path) -> None:
    clock = FakeClock()
    first = await _open(tmp_path / "s.db", clock)
    assert await first.cache.get_or_fetch("q", lambda: _value(b"answer"), 60) == (b"answer", False)
    assert first.later.pending == 1  # the write waits for the caller to yield (its reply goes out first)
    await first.aclose()  # ... and is done before the store closes
    second = await _open(tmp_path / "s.db", clock)
    try:
        assert await second.cache.get_or_fetch("q", lambda: _value(b"fetched again"), 60) == (b"answer", True)
    finally:
        await second.aclose()


async def test_a_twin_in_another_process_waits_for_the_deferred_write_and_gets_the_answer(tmp_path: Path) -> None:
    clock = FakeClock()
    one, two = await _open(tmp_path / "s.db", clock), await _open(tmp_path / "s.db", clock)
    try:
        await one.cache.get_or_fetch("q", lambda: _value(b"answer"), 60)
        # the lease is still held: the twin polls (on the fake clock), the write runs meanwhile, the twin hits
        assert await two.cache.get_or_fetch("q", lambda: _value(b"duplicate"), 60) == (b"answer", True)
        assert clock.sleeps  # it did wait for the lease
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_deferred_write_that_fails_is_logged_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    later = Later()

    async def broken() -> None:
        raise RuntimeError("disk on fire")

    later.run(broken)
    with caplog.at_level(logging.ERROR, logger="brave_search_mcp.state.later"):
        await later.settle()
    assert later.pending == 0
    assert "deferred write to the shared state failed" in caplog.text and "disk on fire" in caplog.text


async def test_a_plan_change_on_a_store_that_lost_its_plans_stores_the_plan_this_process_knows(tmp_path: Path) -> None:
    """A state file made afresh (or a Redis restarted empty) under a process that learned 20/s: the next plan change
    (a pause) stores that plan with the change, not the family's unknown initial plan (which would make every process
    probe and re-learn it)."""
    clock = FakeClock()
    one, two = await _open(tmp_path / "s.db", clock), await _open(tmp_path / "s.db", clock)
    try:
        mine = one.limiter("brave:k", rate=None, family="search")
        await mine.change(lambda p: p.learned_as(20.0, 10))
        with sqlite3.connect(tmp_path / "s.db") as other:
            other.execute("DELETE FROM plans")
        await mine.change(lambda p: p.blocked(clock() + 1.0))
        stored = await two.slots.modify(two.limiter("brave:k", rate=None, family="search").ask, lambda p: p)
        assert (stored.plan_rate, stored.plan_burst, stored.blocked_until) == (20.0, 10, clock() + 1.0)
    finally:
        await one.aclose()
        await two.aclose()


async def test_writes_wait_for_the_calls_in_flight_and_never_longer_than_the_hold() -> None:
    later, done = Later(), []

    async def write() -> None:
        done.append(True)

    with later.busy():  # the call that defers the write...
        with later.busy():  # ...and another still in flight when the first has answered
            later.run(write)
        for _ in range(20):  # bounded: every ready step runs
            await asyncio.sleep(0)
        assert done == []
    await later.settle()
    assert done == [True]
    impatient = Later(hold_seconds=0.0)
    with impatient.busy():
        impatient.run(write)
        await impatient.settle()  # the hold is spent: the write goes while the call is still in flight
    assert done == [True, True]


async def test_a_write_leaves_the_loop_to_the_next_call_and_runs_once_no_call_is_in_flight() -> None:
    clock = FakeClock()
    later, done = Later(sleep=clock.sleep), []

    async def write() -> None:
        done.append(True)

    later.run(write)  # the reply of a call is out
    with later.busy():  # the client's next call arrives within the grace
        for _ in range(20):  # bounded: every ready step runs
            await asyncio.sleep(0)
        assert clock.sleeps == [0.002] and done == []  # the grace was given; the call in flight holds the write
    for _ in range(20):
        await asyncio.sleep(0)
    assert done == [True] and later.pending == 0


async def test_writes_run_in_the_order_they_were_queued_each_failure_logged_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    later, done = Later(grace_seconds=0.0), []

    def write(n: int) -> Callable[[], Awaitable[None]]:
        async def op() -> None:
            if n == 2:
                raise RuntimeError("disk on fire")
            done.append(n)

        return op

    for n in range(1, 5):
        later.run(write(n))
    assert later.pending == 4
    with caplog.at_level(logging.ERROR, logger="brave_search_mcp.state.later"):
        await later.settle()
    assert done == [1, 3, 4] and later.pending == 0
    assert [r.getMessage() for r in caplog.records] == ["a deferred write to the shared state failed"]
