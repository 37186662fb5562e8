"""The default shared backend: one SQLite file shared by processes, surviving restarts, never failing a call."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from brave_search_mcp.state import sqlite_conn, sqlite_file
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.state.sqlite import SqliteStore
from testkit.clock import FakeClock
from testkit.state_worker import run_workers
from tests import state_contract as contract
from tests.test_state_memory import CASES


async def _sqlite(
    path: Path, clock: FakeClock, *, cache_max_entries: int = 10, cache_max_bytes: int | None = None
) -> StateBackend:
    return await open_state(
        f"sqlite://{path}",
        cache_max_entries=cache_max_entries,
        cache_max_bytes=cache_max_bytes,
        clock=clock,
        sleep=clock.sleep,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
async def test_limiter_contract(
    case: Callable[[StateBackend, FakeClock], Awaitable[None]], clock: FakeClock, tmp_path: Path
) -> None:
    backend = await _sqlite(tmp_path / "s.db", clock)
    try:
        assert backend.name == "sqlite"
        await case(backend, clock)
    finally:
        await backend.aclose()


@pytest.mark.anyio
async def test_cache_contract(clock: FakeClock, tmp_path: Path) -> None:
    backend = await _sqlite(tmp_path / "s.db", clock)
    try:
        await contract.cache_single_flight(backend)
        await contract.cache_errors_not_stored(backend)
        await contract.records_round_trip(backend)
    finally:
        await backend.aclose()


async def _value(v: bytes) -> bytes:
    return v


@pytest.mark.anyio
async def test_cache_and_plan_survive_a_restart_and_expire(clock: FakeClock, tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "s.db"  # missing directories are created
    first = await _sqlite(path, clock)
    await first.cache.get_or_fetch("k", lambda: _value(b"kept"), 30.0)
    await first.limiter("brave", rate=None, family="search").change(lambda p: p.learned_as(20, 20))
    await first.records.put("breaker", {"state": "open"}, ttl=30)
    await first.aclose()
    second = await _sqlite(path, clock)
    try:
        assert await second.cache.get_or_fetch("k", lambda: _value(b"new"), 30.0) == (b"kept", True)
        assert (await second.limiter("brave", rate=None, family="search").snapshot())["plan_rate"] == 20.0
        assert await second.records.get("breaker") == {"state": "open"}
        await clock.sleep(31)
        assert await second.cache.get_or_fetch("k", lambda: _value(b"new"), 30.0) == (b"new", False)
        assert await second.records.get("breaker") is None
    finally:
        await second.aclose()


@pytest.mark.anyio
async def test_cache_is_bounded_by_entries_and_bytes_least_recently_used_first(
    clock: FakeClock, tmp_path: Path
) -> None:
    backend = await _sqlite(tmp_path / "s.db", clock, cache_max_entries=2, cache_max_bytes=10)
    try:
        await backend.cache.get_or_fetch("a", lambda: _value(b"1234"), 60)
        await clock.sleep(1)
        await backend.cache.get_or_fetch("b", lambda: _value(b"1234"), 60)
        await clock.sleep(1)
        assert (await backend.cache.get_or_fetch("a", lambda: _value(b"x"), 60))[1] is True  # a is now fresher
        await clock.sleep(1)
        await backend.cache.get_or_fetch("c", lambda: _value(b"1234"), 60)  # evicts b (least recently used)
        await backend.settle()  # ... once stored, beside the reply (state.later)
        assert (await backend.cache.get_or_fetch("a", lambda: _value(b"x"), 60))[1] is True
        assert (await backend.cache.get_or_fetch("b", lambda: _value(b"1234"), 60))[1] is False
        stats = await backend.cache.stats()
        assert stats["entries"] == 2 and stats["bytes"] <= 10
        # one value over the byte bound is served but never stored
        assert await backend.cache.get_or_fetch("big", lambda: _value(b"x" * 11), 60) == (b"x" * 11, False)
        assert (await backend.cache.get_or_fetch("big", lambda: _value(b"y"), 60))[1] is False
    finally:
        await backend.aclose()


@pytest.mark.anyio
async def test_a_file_that_cannot_be_made_warns_once_calls_still_work_and_it_is_used_once_it_can(
    clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a-file").write_text("x")
    path = tmp_path / "a-file" / "s.db"  # its parent is a file: nothing can be created there (even as root)
    with caplog.at_level(logging.WARNING):
        backend = await _sqlite(path, clock)
        limiter = backend.limiter("brave", rate=RATE_FAST, burst=1)
        for _ in range(3):
            await limiter.acquire()
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"v"), 60) == (b"v", False)
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"w"), 60) == (b"v", True)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0].getMessage()
    health = backend.health()
    assert backend.name == "sqlite" and health["degraded"] is True and str(path) in health["warning"]
    (tmp_path / "a-file").unlink()  # the directory can be made now: the next try after the interval uses the file
    await clock.sleep(5.0)
    await limiter.acquire()
    assert backend.health()["degraded"] is False and path.exists()
    await backend.aclose()


@pytest.fixture
def other_writer(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """Another process's connection, mid-transaction on the new file ``s.db``: it holds the lock opening needs."""
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("CREATE TABLE t (x)")
        yield other
    finally:
        other.close()


def test_opening_waits_while_another_process_holds_the_new_file(
    tmp_path: Path, other_writer: sqlite3.Connection
) -> None:
    """A new file another connection is writing answers "locked" at once (SQLite skips its busy wait there):
    the opening tries again after a pause instead of calling the file unusable."""
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            other_writer.execute("COMMIT")  # the other process is done after the third pause

    with contextlib.closing(sqlite_file.connect(tmp_path / "s.db", pause=pause)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert pauses == [0.005, 0.01, 0.015]


@pytest.mark.usefixtures("other_writer")
def test_opening_gives_up_on_a_lock_held_past_the_busy_timeout(tmp_path: Path) -> None:
    """Bounded: a lock that never goes away is reported (and the process runs on memory) after the busy timeout."""
    now = [0.0]

    def pause(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite_file.connect(tmp_path / "s.db", pause=pause, clock=lambda: now[0])
    assert sqlite_file.BUSY_TIMEOUT_MS / 1000 <= now[0] < sqlite_file.BUSY_TIMEOUT_MS / 1000 + 0.1


RATE_FAST = 1000.0


@pytest.mark.anyio
async def test_store_failing_mid_run_falls_back_to_memory_and_recovers(
    clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = await open_state(
        f"sqlite://{tmp_path / 's.db'}", cache_max_entries=10, clock=clock, sleep=clock.sleep, retry_interval=5.0
    )
    assert isinstance(backend, SharedBackend)
    assert isinstance(backend.store, SqliteStore)
    file = backend.store.state  # the named file holds the cache too
    limiter = backend.limiter("brave", rate=RATE_FAST, burst=1)
    await limiter.acquire()
    good = file.connection
    broken = sqlite3.connect(":memory:")
    broken.close()
    file._conn = broken  # every statement now raises sqlite3.ProgrammingError
    with caplog.at_level(logging.WARNING):
        await limiter.acquire()
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"v"), 60) == (b"v", False)
        await backend.records.put("r", {"a": 1})
        assert await backend.records.get("r") == {"a": 1}
        assert (await limiter.snapshot())["degraded"] is True
    assert backend.health()["degraded"] is True
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    file._conn = good
    await clock.sleep(5)
    await limiter.acquire()
    path = str(tmp_path / "s.db")
    assert backend.health() == {"backend": "sqlite", "location": path, "cache_location": path, "degraded": False}
    await backend.aclose()


@pytest.mark.anyio
async def test_an_operation_waits_in_a_thread_while_another_connection_writes(tmp_path: Path) -> None:
    """Issue 22 item 3: operations run on the event loop, but never wait there: while another connection holds the
    write lock, a reservation and a cache write wait for it in a worker thread and the loop keeps running."""
    path = tmp_path / "s.db"
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10)
    assert isinstance(backend, SharedBackend)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        limiter = backend.limiter("brave", rate=RATE_FAST, burst=5)
        await limiter.acquire()  # the file exists, the plan is stored
        other.execute("BEGIN IMMEDIATE")
        ticks = 0
        done: list[str] = []

        async def ticker() -> None:
            nonlocal ticks
            while len(done) < 2:
                ticks += 1
                await anyio.sleep(0.01)

        async def writer(name: str, op: Callable[[], Awaitable[object]]) -> None:
            await op()
            done.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            tg.start_soon(writer, "reserve", limiter.acquire)
            tg.start_soon(writer, "put", lambda: backend.cache.get_or_fetch("k", lambda: _value(b"v"), 60))
            await anyio.sleep(0.3)
            assert done == [] and ticks >= 10  # both wait for the lock, the loop does not
            other.execute("COMMIT")
        assert sorted(done) == ["put", "reserve"]
        assert backend.health()["degraded"] is False
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"w"), 60) == (b"v", True)
    finally:
        other.close()
        await backend.aclose()


@pytest.mark.anyio
async def test_writes_reach_the_database_file_by_the_stores_own_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's automatic checkpoint (which fsyncs inside a commit) is off; the store moves the WAL into the file
    itself, in a thread and on a connection of its own, every CHECKPOINT_EVERY operations."""
    monkeypatch.setattr(sqlite_conn, "CHECKPOINT_EVERY", 2)
    path = tmp_path / "s.db"
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10)
    try:
        # get-or-lease, then put-and-release: two operations
        await backend.cache.get_or_fetch("k", lambda: _value(b"v" * 10_000), 60)
        copy = tmp_path / "copy.db"  # the database file alone, without its WAL

        def rows_in_the_file() -> int:
            copy.write_bytes(path.read_bytes())
            with contextlib.closing(sqlite3.connect(copy)) as conn:
                try:
                    return int(conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0])
                except sqlite3.DatabaseError:  # not even the schema is in the file yet, or copied mid-checkpoint
                    return 0

        def wait_for_rows() -> int:  # the checkpoint runs in a thread of its own
            deadline = time.monotonic() + 5.0
            while rows_in_the_file() < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            return rows_in_the_file()

        assert await anyio.to_thread.run_sync(wait_for_rows) == 1
        with contextlib.closing(sqlite3.connect(copy)) as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)  # a new connection's default
    finally:
        await backend.aclose()


# ---------------------------------------------------------------- real processes, real time (small totals)


def test_two_processes_share_one_limiter(tmp_path: Path) -> None:
    def granted() -> list[float]:
        with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as conn:
            return [t for (t,) in conn.execute("SELECT t FROM starts WHERE upstream = 'brave|'")]

    contract.two_processes_share_one_limiter(f"sqlite://{tmp_path / 's.db'}", granted)


def test_processes_opening_a_new_state_file_together_all_share_it(tmp_path: Path) -> None:
    """Agents a host starts at the same moment, before any state file exists, all share the new file: none falls
    back to per-process memory (and so to a rate budget of its own) because another was switching it to WAL."""
    rounds = 8
    results = run_workers(3, "--url", f"sqlite://{tmp_path / 's.db'}", "--mode", "open", "--count", str(rounds))
    healths = [h for r in results for h in r["backends"]]
    assert len(healths) == 3 * rounds
    assert all(h["backend"] == "sqlite" and not h["degraded"] for h in healths), [
        h for h in healths if h["backend"] != "sqlite"
    ]


def test_process_killed_holding_the_lease_is_taken_over(tmp_path: Path) -> None:
    contract.killed_lease_holder_is_taken_over(f"sqlite://{tmp_path / 's.db'}")


def test_processes_asking_the_same_query_send_one_upstream_request(tmp_path: Path) -> None:
    contract.same_query_one_upstream_request(f"sqlite://{tmp_path / 's.db'}")
