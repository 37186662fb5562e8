"""Issue 36 items 1 and 3 on real SQLite files: corrupt, locked by a stuck process, full, read-only; records and
cached values that fail validation. Each fault degrades calls to memory (never fails one), says why in health, and
the file is used again once it works; what was stored and fails validation is dropped and rebuilt."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest

from brave_search_mcp.brave.shared_state import FORMAT, SharedUpstream, pack
from brave_search_mcp.state import sqlite_conn
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.state.sqlite import SqliteStore
from testkit.clock import FakeClock
from testkit.store_faults import can_make_read_only

pytestmark = pytest.mark.anyio

RETRY = 5.0
MONTH = "brave:key|:month:2026-11"


@asynccontextmanager
async def opened(path: Path, clock: FakeClock, cache_max_bytes: int | None = None) -> AsyncIterator[SharedBackend]:
    backend = await open_state(
        f"sqlite://{path}",
        cache_max_entries=10,
        cache_max_bytes=cache_max_bytes,
        clock=clock,
        sleep=clock.sleep,
        retry_interval=RETRY,
    )
    assert isinstance(backend, SharedBackend)
    try:
        yield backend
    finally:
        await backend.aclose()


async def book(backend: StateBackend, clock: FakeClock, n: int = 1) -> int:
    count = 0
    for _ in range(n):
        _, count = await backend.slots.book(MONTH, None, 10**10, clock())
    return count


async def _value(v: bytes) -> bytes:
    return v


GARBAGE = b"this is not a database, just garbage " * 200


async def test_a_corrupt_file_is_moved_aside_and_made_afresh(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(GARBAGE)
    async with opened(path, clock) as backend:
        assert await book(backend, clock, 2) == 2
        assert backend.health()["degraded"] is False
    assert (tmp_path / "s.db.corrupt").read_bytes() == GARBAGE  # kept for whoever wants to look


async def test_a_file_that_turns_corrupt_under_running_processes_is_rebuilt_with_their_counts(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Garbage written over the file while a process runs: the next process to open it moves it aside and makes it
    afresh; the running one follows it to the new file, and the month's count it knew is put back there, so the
    spending cap forgets nothing either process knew; no call fails meanwhile. (One call at a time here: the real
    quarter second during which a replaced file is not used, for calls racing the one that found it, is not
    needed; the fault suite has the races.)"""
    monkeypatch.setattr(sqlite_conn, "REPLACED_HOLD_SECONDS", 0.0)
    path = tmp_path / "s.db"
    async with opened(path, clock) as running:
        limiter = running.limiter("brave", rate=100.0, burst=1)
        assert await book(running, clock, 3) == 3
        assert isinstance(running.store, SqliteStore)
        running.store.state.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with caplog.at_level(logging.WARNING):
            path.write_bytes(GARBAGE)
            async with opened(path, clock) as newcomer:
                assert await book(newcomer, clock) == 1  # a new file: it knew nothing
                await limiter.acquire()  # served
                assert await book(running, clock) == 4  # on memory while it moves to the new file
                assert running.health()["degraded"] is True
                await clock.sleep(RETRY)
                await limiter.acquire()
                # the new file has the newcomer's one; the three the running process knew are put back, its one
                # meanwhile added, and this one
                assert await book(running, clock) == 6
                assert await book(newcomer, clock) == 7
            assert running.health()["degraded"] is False
    assert (tmp_path / "s.db.corrupt").read_bytes() == GARBAGE
    assert len([r for r in caplog.records if "moved aside" in r.getMessage()]) == 1


@contextmanager
def stuck_writer(path: Path) -> Iterator[None]:
    """Another process holding the file's write lock (a transaction it never ends) until the block ends."""
    code = (
        "import sqlite3, sys\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('DELETE FROM leases WHERE 0')\n"
        "print('held', flush=True); sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "held"
            yield
        finally:
            holder.stdin.close()  # the holder reads EOF and exits, ending its transaction
            holder.wait(timeout=10)


async def test_a_file_locked_by_a_stuck_process_costs_each_call_at_most_the_lock_wait(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten calls at once while another process holds the write lock: together they wait the lock wait once (0.2 s
    here; a second by default), not one after another, then run on memory; released, the file is used again."""
    monkeypatch.setattr(sqlite_conn, "LOCK_WAIT_SECONDS", 0.2)
    path = tmp_path / "s.db"
    async with opened(path, clock) as backend:
        limiter = backend.limiter("brave", rate=1000.0, burst=20)
        assert await book(backend, clock) == 1
        with stuck_writer(path):
            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(limiter.acquire)
            took = time.monotonic() - started
            assert took < 2.0, took  # 10 x 5 s one after another before issue 36
            assert backend.health()["degraded"] is True
            assert "locked by another process" in backend.health()["warning"]
            assert await book(backend, clock) == 2  # on memory, on from the store's count
        await clock.sleep(RETRY)
        assert await book(backend, clock) == 3
        assert backend.health()["degraded"] is False


async def test_a_full_disk_degrades_the_cache_and_the_file_is_used_again_once_there_is_room(
    tmp_path: Path, clock: FakeClock
) -> None:
    """SQLITE_FULL (here: the connection may not grow the file, as on a full disk): the answer is served from
    memory; the next try opens the file again and stores there."""
    path = tmp_path / "s.db"
    async with opened(path, clock, cache_max_bytes=10**6) as backend:
        assert isinstance(backend.store, SqliteStore)
        conn = backend.store.state.connection
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        big = os.urandom(200_000)
        assert await backend.cache.get_or_fetch("big", lambda: _value(big), 60) == (big, False)
        await backend.settle()  # the store fails after the reply
        assert backend.health()["degraded"] is True and "full" in backend.health()["warning"]
        assert await backend.cache.get_or_fetch("big", lambda: _value(b"x"), 60) == (b"x", False)  # memory's
        await clock.sleep(RETRY)
        assert await backend.cache.get_or_fetch("other", lambda: _value(big), 60) == (big, False)
        await backend.settle()
        assert backend.health()["degraded"] is False
        stats = await backend.cache.stats()
        assert stats["entries"] == 2 and stats["bytes"] == len(big) + 1  # with memory's answer, fetched meanwhile
        assert await backend.cache.get_or_fetch("big", lambda: _value(b"y"), 60) == (b"x", True)


def make_read_only(path: Path) -> None:
    """Writes to ``path`` fail, even through a connection already open (the immutable attribute)."""
    if (why := can_make_read_only()) is not None:
        pytest.skip(why)
    subprocess.run(["chattr", "+i", str(path)], check=True)


def make_writable(path: Path) -> None:
    subprocess.run(["chattr", "-i", str(path)], check=False)


async def test_a_read_only_file_degrades_calls_and_is_used_again_once_writable(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "s.db"
    async with opened(path, clock) as backend:
        assert await book(backend, clock, 2) == 2
        wal = Path(f"{path}-wal")
        try:
            make_read_only(wal)
            assert await book(backend, clock) == 3  # on memory
            assert backend.health()["degraded"] is True
            await clock.sleep(RETRY)
            assert await book(backend, clock) == 4  # still read-only: memory again, tried once
        finally:
            make_writable(wal)
        await clock.sleep(RETRY)
        assert await book(backend, clock) == 5  # the two counted meanwhile reached the file
        assert backend.health()["degraded"] is False


async def test_a_stored_record_that_is_not_json_is_dropped_and_status_says_so(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.db"
    async with opened(path, clock) as backend:
        await backend.records.put("breaker:searxng", {"failures": 1})
        with sqlite3.connect(path) as other:
            other.execute("UPDATE records SET value = '{not json' WHERE key = 'breaker:searxng'")
        with caplog.at_level(logging.WARNING):
            assert await backend.records.get("breaker:searxng") is None
            assert await backend.records.get("breaker:searxng") is None  # gone: dropped once
        dropped = backend.health()["dropped"]
        assert dropped["count"] == 1 and "not a JSON object" in dropped["last"]
        assert backend.health()["degraded"] is False  # a bad value is not a bad store
        with sqlite3.connect(path) as other:
            assert other.execute("SELECT count(*) FROM records WHERE key = 'breaker:searxng'").fetchone() == (0,)
    assert len([r for r in caplog.records if "dropped" in r.getMessage()]) == 1


async def test_a_cached_value_its_reader_refuses_is_dropped_and_fetched_again(tmp_path: Path, clock: FakeClock) -> None:
    async with opened(tmp_path / "s.db", clock) as backend:
        await backend.cache.get_or_fetch("k", lambda: _value(b"damaged"), 60)
        await backend.settle()

        def readable(value: bytes) -> bool:
            return value != b"damaged"

        assert await backend.cache.get_or_fetch("k", lambda: _value(b"good"), 60, readable) == (b"good", False)
        await backend.settle()
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"unused"), 60, readable) == (b"good", True)
        assert backend.health()["dropped"]["count"] == 1


async def test_a_damaged_shared_brave_answer_is_fetched_again_not_failed_on(tmp_path: Path, clock: FakeClock) -> None:
    """An answer stored as garbage (another version, a torn write) made every call for that query fail with
    PARSE_ERROR until it expired; it is now dropped and asked again."""
    async with opened(tmp_path / "s.db", clock) as backend:
        shared = SharedUpstream(backend, "brave:key")
        store = backend.store
        assert isinstance(store, SqliteStore)
        for stored in (b"no header line at all", pack(200, b"\x1f\x8b not gzip", "gzip"), pack(500, b"{}")):
            await store.cache_put_release(f"brave:key:{FORMAT}:web?q=x", "o", stored, clock() + 60, clock())
            (status, body, _), hit = await shared.cached("web?q=x", _fresh, 60, _json_object)
            assert (status, json.loads(body), hit) == (200, {"fresh": True}, False)
            await backend.settle()
            await backend.cache.clear()
        assert backend.health()["dropped"]["count"] == 3


async def _fresh() -> tuple[int, bytes, str]:
    return 200, b'{"fresh": true}', "identity"


def _json_object(value: bytes) -> bool:
    head, _, body = value.partition(b"\n")
    return json.loads(head)["status"] == 200 and isinstance(json.loads(body), dict)


async def test_a_lease_is_renewed_while_a_slow_fetch_runs(tmp_path: Path, clock: FakeClock) -> None:
    """A fetch that outlives the 30 s lease keeps it (renewed every 10 s): another process asking meanwhile waits
    instead of sending the same request again."""
    async with opened(tmp_path / "s.db", clock) as backend, opened(tmp_path / "s.db", clock) as other:
        release = anyio.Event()

        async def slow() -> bytes:
            await release.wait()
            return b"slow answer"

        async with anyio.create_task_group() as tg:
            tg.start_soon(backend.cache.get_or_fetch, "k", slow, 60.0)
            for _ in range(200):  # bounded: the renewals advance the fake clock
                await anyio.lowlevel.checkpoint()
                if clock() > 1000.0 + 90:
                    break
            assert clock() > 1000.0 + 90  # three leases' worth
            store = other.store
            assert await store.cache_get_or_lease("k", "someone else", clock(), clock() + 30) == (None, False)
            release.set()
        await backend.settle()
        assert await other.cache.get_or_fetch("k", lambda: _value(b"again"), 60.0) == (b"slow answer", True)
