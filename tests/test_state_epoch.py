"""Issue 43 items 4 and 15: the records the outage repayment keeps (a store's epoch, the base put back into a counter)
are checked like every stored value: a damaged one is dropped and rebuilt with one warning, never raised on every
call (which kept the store "down" for good, an ERROR with a traceback every retry interval); and the epoch a process
read is read again after each repayment. SQLite files and a real redis-server."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from brave_search_mcp.state.base import StateOptions, StoreUnavailable
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.redis_keys import EPOCH_KEY, restored_key
from brave_search_mcp.state.shared import SharedBackend, Store
from brave_search_mcp.state.sqlite_epoch import EPOCH_KEY as FILE_EPOCH_KEY
from brave_search_mcp.state.sqlite_epoch import RESTORED_PREFIX
from testkit.clock import FakeClock
from testkit.redis_server import RedisServer
from tests import state_kinds
from tests.test_state_outage import RETRY, Flaky

pytestmark = pytest.mark.anyio

COUNTER = "brave:k:month:2026-11"
DAMAGED = ["not json", "42", '"short"', b"\x00\x01", "list"]  # "list": a Redis key of another type
DAMAGED_BASES = ["not json", "-1", "2.5", b"\x00\x01", "list"]


redis_server, kind = state_kinds.redis_server, state_kinds.kind  # fixtures: each test on both stores


class Raw:
    """Writes into the store behind the backend's back, as a damaged file or key would."""

    def __init__(self, kind: str, path: Path, server: RedisServer | None) -> None:
        self.kind, self.path, self.server = kind, path, server

    def _sql(self, sql: str, args: tuple[Any, ...] = ()) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(sql, args)
        conn.close()

    def _redis(self, *command: Any) -> None:
        import redis

        assert self.server is not None
        with redis.Redis.from_url(self.server.url) as r:
            r.execute_command(*command)

    def _put(self, key: str, redis_key: str, value: Any) -> None:
        if self.kind == "sqlite":
            self._sql("INSERT OR REPLACE INTO records VALUES (?, ?, NULL)", (key, "[]" if value == "list" else value))
            return
        self._redis("DEL", redis_key)
        if value == "list":
            self._redis("RPUSH", redis_key, "a")
        else:
            self._redis("SET", redis_key, value)

    def epoch(self, value: Any) -> None:
        self._put(FILE_EPOCH_KEY, EPOCH_KEY, value)

    def restored(self, value: Any) -> None:
        self._put(RESTORED_PREFIX + COUNTER, restored_key(COUNTER), value)

    def wipe(self) -> None:
        """The store lost what it held (a Redis restarted empty, a file's rows gone)."""
        if self.kind == "sqlite":
            self._sql("DELETE FROM counters")
            self._sql("DELETE FROM records")
        else:
            self._redis("FLUSHDB")


@asynccontextmanager
async def opened(
    kind: str, tmp_path: Path, server: RedisServer | None, clock: FakeClock
) -> AsyncIterator[tuple[SharedBackend, Flaky, Raw]]:
    """A backend whose store fails on command (``Flaky``), and raw access to that store."""
    if kind == "sqlite":
        url = f"sqlite://{tmp_path / 's.db'}"
    else:
        assert server is not None
        url = server.url
    raw = Raw(kind, tmp_path / "s.db", server)
    inner = await open_state(url, cache_max_entries=10, clock=clock, sleep=clock.sleep)
    assert isinstance(inner, SharedBackend)
    if kind == "redis":
        raw.wipe()
    store = Flaky(inner.store)
    backend = SharedBackend(kind, cast(Store, store), StateOptions(10, clock, clock.sleep, retry_interval=RETRY))
    try:
        yield backend, store, raw
    finally:
        await backend.aclose()


async def book(backend: SharedBackend, clock: FakeClock, n: int = 1) -> list[int]:
    return [(await backend.slots.book(COUNTER, None, clock() + 86400, clock()))[1] for _ in range(n)]


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("value", DAMAGED, ids=["words", "a-number", "too-short", "a-blob", "another-type"])
async def test_a_damaged_epoch_is_rebuilt_and_the_outage_counts_land_once(
    value: Any, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    """The store keeps its counts; only its epoch record is damaged. It is rebuilt as the id this process read, so
    the outage's two requests are added once and the three already stored are not put back on top."""
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, store, raw):
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            assert await book(backend, clock, 3) == [1, 2, 3]
            raw.epoch(value)
            store.fault = StoreUnavailable("down")
            assert await book(backend, clock, 2) == [4, 5]
            store.fault = None
            for _ in range(3):  # retry intervals: the store comes back and stays back
                await clock.sleep(RETRY)
                await book(backend, clock)
                assert backend.health()["degraded"] is False, backend.health()
            assert await backend.slots.count(COUNTER, clock()) == 5 + 3
        assert _errors(caplog) == []
        assert "state epoch" in backend.health()["dropped"]["last"]


@pytest.mark.parametrize("value", DAMAGED, ids=["words", "a-number", "too-short", "a-blob", "another-type"])
async def test_a_process_that_first_meets_a_damaged_epoch_stays_on_the_store(
    value: Any, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, _store, raw):
        raw.epoch(value)
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            for n in range(1, 4):
                assert await book(backend, clock) == [n]
                await clock.sleep(RETRY)
                assert backend.health()["degraded"] is False, backend.health()
        assert _errors(caplog) == []


@pytest.mark.parametrize("value", DAMAGED_BASES, ids=["words", "negative", "a-fraction", "a-blob", "another-type"])
async def test_a_damaged_restored_base_is_read_as_none_and_the_counts_come_back(
    value: Any, kind: str, tmp_path: Path, redis_server: RedisServer | None, caplog: pytest.LogCaptureFixture
) -> None:
    """The store lost its counts and holds a damaged record of the base put back: the outage's base and bookings
    are put back (as for a missing record), and the store stays in use."""
    clock = FakeClock()
    async with opened(kind, tmp_path, redis_server, clock) as (backend, store, raw):
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            assert await book(backend, clock, 3) == [1, 2, 3]
            store.fault = StoreUnavailable("down")
            assert await book(backend, clock, 2) == [4, 5]
            raw.wipe()
            raw.restored(value)
            store.fault = None
            await clock.sleep(RETRY)
            assert await book(backend, clock) == [6]  # the base, 3, the outage's two, and this one
            await clock.sleep(RETRY)
            assert await book(backend, clock) == [7]
            assert backend.health()["degraded"] is False, backend.health()
        assert _errors(caplog) == []


async def test_the_epoch_is_read_again_after_a_repayment(tmp_path: Path) -> None:
    """Issue 43 item 15: after the outage's counts went into a store made afresh (a new epoch), a second outage's
    batch carries the new epoch: its base is not put back a second time."""
    clock = FakeClock()
    async with opened("sqlite", tmp_path, None, clock) as (backend, store, raw):
        assert await book(backend, clock, 3) == [1, 2, 3]
        store.fault = StoreUnavailable("down")
        assert await book(backend, clock, 2) == [4, 5]
        raw.wipe()  # a new epoch: the base, 3, goes back with the two
        store.fault = None
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [6]
        store.fault = StoreUnavailable("down again")
        assert await book(backend, clock) == [7]
        store.fault = None
        await clock.sleep(RETRY)
        assert await book(backend, clock) == [8]  # not 8 + the base put back again
        assert await backend.slots.count(COUNTER, clock()) == 8
