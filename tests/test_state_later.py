"""A miss's answer is stored beside the reply (``state.later``), at once, in the task group the lifespan owns: never
deferred, never lost at shutdown (issue 43 item 7), never a failed call."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from brave_search_mcp import BraveSearch
from brave_search_mcp.compose import open_backend
from brave_search_mcp.state.later import Later
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio


async def _open(path: Path, clock: FakeClock) -> SharedBackend:
    backend = await open_state(f"sqlite://{path}", clock=clock, sleep=clock.sleep, cache_max_entries=100)
    assert isinstance(backend, SharedBackend)
    return backend


async def _value(data: bytes) -> bytes:
    return data


async def _stored(path: Path, key: str) -> bytes | None:
    """What the state file holds for ``key`` (as the next process reads it), without fetching."""
    clock = FakeClock()
    backend = await _open(path, clock)
    try:
        found, _ = await backend.store.cache_get_or_lease(key, "reader", clock(), clock() + 1.0)
        return found
    finally:
        await backend.aclose()


async def test_a_miss_returns_with_its_write_started_beside_it_and_the_lifespan_stores_it_on_close(
    tmp_path: Path,
) -> None:
    """The write runs in the lifespan's task group (the reply does not wait for it); closing waits for it."""
    settings = make_settings(state=f"sqlite://{tmp_path / 's.db'}")
    async with open_backend(settings) as backend:
        assert isinstance(backend, SharedBackend)
        assert await backend.cache.get_or_fetch("q", lambda: _value(b"answer"), 60) == (b"answer", False)
        assert backend.later.pending == 1  # started beside the reply, not awaited by it
    assert await _stored(tmp_path / "s.db", "q") == b"answer"


async def test_a_pending_cache_write_is_stored_when_the_lifespan_is_cancelled(tmp_path: Path) -> None:
    """Issue 43 item 7: a bare asyncio task could be lost at shutdown; a server stopped (its lifespan cancelled) right
    after a miss still stores the answer it fetched and paid for."""
    settings = make_settings(state=f"sqlite://{tmp_path / 's.db'}")
    with anyio.CancelScope() as stop:
        async with open_backend(settings) as backend:
            assert isinstance(backend, SharedBackend)
            store = backend.store
            put = store.cache_put_release

            async def over_the_network(key: str, owner: str, value: bytes | None, expires: float, now: float) -> None:
                await anyio.sleep(0.01)  # a store a round trip away (Redis): a checkpoint before the write
                await put(key, owner, value, expires, now)

            store.cache_put_release = over_the_network  # type: ignore[method-assign]
            await backend.cache.get_or_fetch("q", lambda: _value(b"answer"), 60)
            assert backend.later.pending == 1
            stop.cancel()
            await anyio.sleep_forever()
    assert stop.cancelled_caught
    assert await _stored(tmp_path / "s.db", "q") == b"answer"


async def test_a_backend_without_a_lifespan_writes_before_the_reply(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = await _open(tmp_path / "s.db", clock)
    try:
        assert await backend.cache.get_or_fetch("q", lambda: _value(b"answer"), 60) == (b"answer", False)
        assert backend.later.pending == 0
        assert await _stored(tmp_path / "s.db", "q") == b"answer"
    finally:
        await backend.aclose()


async def test_a_twin_in_another_sqlite_process_polls_briefly_and_gets_the_answer(tmp_path: Path) -> None:
    """SQLite processes on one host keep a short poll for another's flight (Redis wakes them: test_state_flights)."""
    clock = FakeClock()
    one, two = await _open(tmp_path / "s.db", clock), await _open(tmp_path / "s.db", clock)
    release = anyio.Event()

    async def slow() -> bytes:
        await release.wait()
        return b"answer"

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one.cache.get_or_fetch, "q", slow, 60)
            await anyio.lowlevel.checkpoint()
            got: list[tuple[bytes, bool]] = []

            async def twin() -> None:
                got.append(await two.cache.get_or_fetch("q", lambda: _value(b"duplicate"), 60))

            tg.start_soon(twin)
            for _ in range(1000):  # bounded: until the twin polls the held lease
                if clock.sleeps:
                    break
                await anyio.sleep(0.001)
            release.set()
        assert got == [(b"answer", True)] and clock.sleeps  # it polled, then had the owner's answer
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_write_that_fails_is_logged_and_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    later, done = Later(), []

    def write(n: int) -> Callable[[], Awaitable[None]]:
        async def op() -> None:
            if n == 2:
                raise RuntimeError("disk on fire")
            done.append(n)

        return op

    with caplog.at_level(logging.ERROR, logger="brave_search_mcp.state.later"):
        async with later.owned():
            for n in range(1, 5):
                await later.run(write(n))
            assert later.pending == 4  # started, none run yet: the caller goes first
            await later.settle()
        await later.run(write(5))  # no task group any more: inline
    assert sorted(done) == [1, 3, 4, 5] and later.pending == 0
    assert [r.getMessage() for r in caplog.records] == ["a write to the shared state failed"]
    assert "disk on fire" in caplog.text


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


async def test_the_library_closing_stores_the_answer_its_last_search_fetched(tmp_path: Path) -> None:
    """Issue 43 item 7, through ``BraveSearch``: a script that searches and closes at once leaves the answer in the
    shared cache, where a second library (another process) finds it without asking Brave again."""
    fake = FakeBrave()
    settings = make_settings(state=f"sqlite://{tmp_path / 's.db'}")
    async with BraveSearch(settings=settings, transport=fake.mock_transport()) as brave:
        await brave.web_search("closing time")
    async with BraveSearch(settings=settings, transport=fake.mock_transport()) as again:
        assert (await again.web_search("closing time")).meta.cached is True
    assert fake.hits("/web/search") == 1
