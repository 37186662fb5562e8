"""Issue 36: what the limiter reads back from a shared store (plans, recent starts, monthly counts) is checked before
use; a record no rule could have written (an older version's ``1e308``/s plan, a damaged file or key) is dropped
and rebuilt with one warning, never obeyed and never raised on every call. SQLite files and a real redis-server."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, cast

import pytest

from brave_search_mcp.ratelimit.plan import MAX_MONTH_REQUESTS, PlanState
from brave_search_mcp.state.base import StateBackend, StateOptions, StoreUnavailable
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.owed import Batch
from brave_search_mcp.state.redis_keys import count_key, plan_key, starts_key
from brave_search_mcp.state.shared import SharedBackend, Store
from testkit.clock import FakeClock
from testkit.redis_server import RedisServer
from tests import state_kinds
from tests.test_state_outage import RETRY, Flaky

pytestmark = pytest.mark.anyio

NAME = "brave:k|search"  # the search family of the key ``brave:k``
COUNTER = "brave:k:month:2026-11"
BROKEN_PLANS: list[Any] = [
    "not json",
    "[20, 20]",
    json.dumps({"plan_rate": 1e308, "plan_burst": int(1e308), "clean": 0}),  # what the old code stored
    json.dumps({"plan_rate": 20.0, "plan_burst": 20, "clean": 20, "blocked_until": 1e308}),
    json.dumps({"plan_rate": 20.0, "plan_burst": 20, "clean": 20, "quota_until": 1e12, "quota_trial_at": 1e12}),
    json.dumps({"plan_rate": float("nan")}),
]
BROKEN_COUNTS: list[Any] = ["lots", -5, MAX_MONTH_REQUESTS + 1, 2.5]


class Raw(Protocol):
    """Writes into the store behind the backend's back, as an older version or a damaged file would have."""

    def plan(self, name: str, text: str) -> None: ...

    def start(self, name: str, t: float) -> None: ...

    def count(self, counter: str, value: Any) -> None: ...

    def plan_text(self, name: str) -> str: ...


class SqliteRaw:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        conn = sqlite3.connect(self.path)
        try:
            with conn:
                return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def plan(self, name: str, text: str) -> None:
        self._run("INSERT OR REPLACE INTO plans VALUES (?, ?)", (name, text))

    def start(self, name: str, t: float) -> None:
        self._run("INSERT INTO starts VALUES (?, ?)", (name, t))

    def count(self, counter: str, value: Any) -> None:
        self._run("INSERT OR REPLACE INTO counters VALUES (?, ?, ?)", (counter, value, 1e12))

    def plan_text(self, name: str) -> str:
        return str(self._run("SELECT state FROM plans WHERE upstream = ?", (name,))[0][0])


class RedisRaw:
    def __init__(self, url: str) -> None:
        import redis

        self.r = redis.Redis.from_url(url, decode_responses=True)

    def plan(self, name: str, text: str) -> None:
        try:
            found = json.loads(text)
        except ValueError:
            found = {"plan_rate": text}
        fields = found if isinstance(found, dict) else {"plan_rate": text}
        self.r.delete(plan_key(name))
        self.r.hset(plan_key(name), mapping={k: repr(v) for k, v in fields.items()})

    def start(self, name: str, t: float) -> None:
        self.r.zadd(starts_key(name), {"far": t})

    def count(self, counter: str, value: Any) -> None:
        self.r.set(count_key(counter), str(value))

    def plan_text(self, name: str) -> str:
        stored: dict[str, str] = self.r.hgetall(plan_key(name))  # type: ignore[assignment]
        return json.dumps({k: float(v) for k, v in stored.items()})


redis_server, kind = state_kinds.redis_server, state_kinds.kind  # fixtures: each test on both stores


@asynccontextmanager
async def opened(
    kind: str, tmp_path: Path, redis_server: RedisServer | None, clock: FakeClock
) -> AsyncIterator[tuple[StateBackend, Raw]]:
    raw: Raw
    if kind == "sqlite":
        url = f"sqlite://{tmp_path / 's.db'}"
        raw = SqliteRaw(tmp_path / "s.db")
    else:
        assert redis_server is not None
        import redis

        with redis.Redis.from_url(redis_server.url) as r:
            r.flushdb()
        url, raw = redis_server.url, RedisRaw(redis_server.url)
    backend = await open_state(url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        yield backend, raw
    finally:
        await backend.aclose()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("text", BROKEN_PLANS, ids=["words", "a-list", "1e308", "paused-for-ever", "closed", "nan"])
async def test_a_broken_plan_is_rebuilt_on_the_next_call_with_one_warning(
    text: str, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, raw):
        limiter = backend.limiter("brave:k", rate=None, family="search", primary="search")
        await limiter.acquire()  # the probe: the record exists
        await limiter.change(lambda p: p.learned_as(20, 20))
        raw.plan(NAME, text)
        limiter = backend.limiter("brave:k", rate=None, family="search", primary="search")
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            # no pause of 1e308 s, no exception: rebuilt from the plan this process knew (20/s)
            assert (await limiter.acquire()).waited < 0.1
            await limiter.change(lambda p: p.learned_as(20, 20))
            for _ in range(3):
                assert (await limiter.acquire()).waited < 0.1  # at once at 20/s: the rebuilt plan
        assert not backend.health()["degraded"]
        assert len(_warnings(caplog)) == 1, _warnings(caplog)
        assert PlanState.from_json(json.loads(raw.plan_text(NAME))).plan_rate == 20.0  # rebuilt, stored


async def test_a_start_no_clock_could_have_made_is_ignored_and_dropped(
    kind: str, tmp_path: Path, redis_server: RedisServer | None
) -> None:
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, raw):
        limiter = backend.limiter("brave:k", rate=1.0, burst=1, family="search", primary="search")
        raw.start(NAME, 1e308)
        assert (await limiter.acquire()).waited == 0.0  # the 1/s window holds no real start yet
        await clock.sleep(2.0)
        assert (await limiter.acquire()).waited == 0.0  # and the far start was dropped, not kept for later


@pytest.mark.parametrize("value", BROKEN_COUNTS, ids=["words", "negative", "beyond-a-month", "fraction"])
async def test_a_broken_monthly_count_restarts_from_zero_instead_of_closing_the_cap(
    value: Any, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, raw):
        raw.count(COUNTER, value)
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            assert await backend.slots.count(COUNTER, clock()) == 0
            assert await backend.slots.book(COUNTER, 3, clock() + 86400, clock()) == (True, 1)
            assert await backend.slots.book(COUNTER, 3, clock() + 86400, clock()) == (True, 2)
            await backend.slots.unbook(COUNTER)
            assert await backend.slots.count(COUNTER, clock()) == 1
        assert not backend.health()["degraded"]
        assert len(_warnings(caplog)) <= 1


@pytest.mark.parametrize("value", BROKEN_COUNTS, ids=["words", "negative", "beyond-a-month", "fraction"])
async def test_counts_made_during_an_outage_reach_a_store_whose_count_broke_meanwhile(
    value: Any, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    """The outage's counts are added to a broken stored count as to 0, as a booking reads it: the merge that raised
    on it kept the store "down" for this process for good (every operation repays what is owed first)."""
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (shared, raw):
        assert isinstance(shared, SharedBackend)
        store = Flaky(shared.store)
        backend = SharedBackend(kind, cast(Store, store), StateOptions(10, clock, clock.sleep, retry_interval=RETRY))

        async def book() -> int:
            return (await backend.slots.book(COUNTER, None, clock() + 86400, clock()))[1]

        assert [await book() for _ in range(3)] == [1, 2, 3]
        store.fault = StoreUnavailable("down")
        assert [await book() for _ in range(2)] == [4, 5]  # on memory, owed to the store
        store.fault = None
        raw.count(COUNTER, value)
        await clock.sleep(RETRY)
        assert await book() == 3  # the broken count restarted from 0, the outage's two went first
        await clock.sleep(RETRY)
        assert await book() == 4
        health = backend.health()
        assert health["degraded"] is False, health
        assert "monthly request count" in health["dropped"]["last"], health
        assert await shared.slots.count(COUNTER, clock()) == 4  # in the store itself
        assert len([line for line in _warnings(caplog) if "request count" in line]) == 1, _warnings(caplog)


@pytest.mark.parametrize("expires", ["never", b"\x00", float("inf")], ids=["words", "a-blob", "infinite"])
async def test_a_broken_expiry_keeps_the_count_and_never_fails_a_booking(
    expires: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite keeps a count's month end in a REAL column, which a damaged file can fill with anything: the count is
    kept (the spending cap loses nothing), the month end repaired; neither a booking nor an outage's repayment
    raises on it (which would keep the store "down" for good)."""
    clock = FakeClock()
    async with opened("sqlite", tmp_path, None, clock) as (shared, raw):
        assert isinstance(shared, SharedBackend) and isinstance(raw, SqliteRaw)
        raw._run("INSERT OR REPLACE INTO counters VALUES (?, ?, ?)", (COUNTER, 5, expires))
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            assert await shared.slots.book(COUNTER, None, clock() + 86400, clock()) == (True, 6)
            raw._run("UPDATE counters SET expires = ? WHERE name = ?", (expires, COUNTER))
            store = shared.store
            batch = Batch(token="t", delta=2, expires=clock() + 86400)
            assert await store.merge_count(COUNTER, batch, clock()) == 8
        assert not shared.health()["degraded"]
        assert raw._run("SELECT n, expires FROM counters WHERE name = ?", (COUNTER,)) == [(8, clock() + 86400)]
