"""Issue 35: the counters are state, the response cache is cache. By default the state (plans, recent starts, the
month's count under the spending cap, the breakers) lives in the user's state directory and the cache in their cache
directory: wiping the cache directory, between runs or under a running server, loses no count. The counters an older
version kept in the cache directory are moved once."""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from brave_search_mcp.state import sqlite_file, sqlite_legacy
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.user_files import legacy_state_path
from testkit.clock import FakeClock
from testkit.state_worker import run_workers

pytestmark = pytest.mark.anyio

MONTH = "brave:k:month:2026-11"  # a month's counter, as the spending cap books it
FOREVER = 1e12  # an expiry far past any test's clock


class Dirs:
    """One user's state and cache directories under a test's own tmp dir."""

    def __init__(self, root: Path) -> None:
        self.state = root / "state" / "brave-search-mcp" / "state.sqlite3"
        self.cache = root / "cache" / "brave-search-mcp" / "cache.sqlite3"
        self.legacy = legacy_state_path(self.cache)  # where versions before issue 35 kept everything

    async def open(self, clock: FakeClock, **options: object) -> StateBackend:
        """The default layout, as a server with no BRAVE_SEARCH_STATE opens it."""
        return await open_state(
            None,
            cache_max_entries=10,
            default_path=self.state,
            cache_path=self.cache,
            clock=clock,
            sleep=clock.sleep,
            **options,  # type: ignore[arg-type]
        )


@pytest.fixture
def dirs(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


@contextlib.asynccontextmanager
async def opened(dirs: Dirs, clock: FakeClock, **options: object) -> AsyncIterator[StateBackend]:
    backend = await dirs.open(clock, **options)
    try:
        yield backend
    finally:
        await backend.aclose()


async def _value(v: bytes) -> bytes:
    return v


async def book(backend: StateBackend, clock: FakeClock, n: int = 1) -> int:
    """Count ``n`` requests this month; the count after them."""
    count = 0
    for _ in range(n):
        granted, count = await backend.slots.book(MONTH, None, FOREVER, clock())
        assert granted
    return count


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def tables(path: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


async def test_counters_go_to_the_state_file_and_answers_to_the_cache_file(dirs: Dirs, clock: FakeClock) -> None:
    async with opened(dirs, clock) as backend:
        assert await book(backend, clock, 2) == 2
        await backend.records.put("breaker", {"state": "open"})
        await backend.cache.get_or_fetch("q", lambda: _value(b"answer"), 60)
        await backend.settle()
        health = backend.health()
    assert (health["location"], health["cache_location"]) == (str(dirs.state), str(dirs.cache))
    assert tables(dirs.state) == {"plans", "starts", "records", "counters", "peers"}
    assert tables(dirs.cache) == {"cache", "leases"}
    with contextlib.closing(sqlite3.connect(dirs.cache)) as conn:
        assert conn.execute("SELECT count(*) FROM cache").fetchone() == (1,)


async def test_wiping_the_cache_directory_between_runs_loses_no_count(dirs: Dirs, clock: FakeClock) -> None:
    async with opened(dirs, clock) as backend:
        assert await book(backend, clock, 3) == 3
        await backend.limiter("brave", rate=None, family="search").change(lambda p: p.learned_as(20, 20))
        await backend.cache.get_or_fetch("q", lambda: _value(b"old"), 60)
    shutil.rmtree(dirs.cache.parent.parent)  # rm -rf ~/.cache (the app's and every other directory in it)
    async with opened(dirs, clock) as backend:
        assert await backend.slots.count(MONTH, clock()) == 3
        assert (await backend.limiter("brave", rate=None, family="search").snapshot())["plan_rate"] == 20.0
        assert await backend.cache.get_or_fetch("q", lambda: _value(b"new"), 60) == (b"new", False)
        assert await book(backend, clock) == 4
        assert backend.health()["degraded"] is False
    assert dirs.cache.exists()


async def test_wiping_the_cache_directory_under_a_running_server_recreates_the_file_and_keeps_sharing(
    dirs: Dirs, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The running process opens the new file (instead of writing into the deleted one, which nobody else sees):
    another process finds what it stores after the wipe, and the count goes on."""
    async with opened(dirs, clock) as first, opened(dirs, clock) as second:
        assert await book(first, clock, 2) == 2
        assert await first.cache.get_or_fetch("q", lambda: _value(b"before"), 60) == (b"before", False)
        await first.settle()
        with caplog.at_level(logging.WARNING):
            shutil.rmtree(dirs.cache.parent)
            assert await first.cache.get_or_fetch("q", lambda: _value(b"after"), 60) == (b"after", False)
            await first.settle()
            assert dirs.cache.exists()
            assert await second.cache.get_or_fetch("q", lambda: _value(b"unused"), 60) == (b"after", True)
            assert await book(second, clock) == 3
            assert await first.slots.count(MONTH, clock()) == 3
        assert first.health()["degraded"] is False and second.health()["degraded"] is False
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_cache_file_that_cannot_be_made_degrades_the_cache_alone(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The cache directory is a file (nothing can be created there, even as root): answers come from this process's
    memory, with one warning in status, while the month's count stays shared through the state file."""
    dirs = Dirs(tmp_path)
    dirs.cache.parent.parent.mkdir(parents=True)
    dirs.cache.parent.write_text("not a directory")
    with caplog.at_level(logging.WARNING):
        async with opened(dirs, clock) as backend, opened(dirs, clock) as other:
            assert await book(backend, clock, 2) == 2
            assert await backend.cache.get_or_fetch("q", lambda: _value(b"v"), 60) == (b"v", False)
            assert await backend.cache.get_or_fetch("q", lambda: _value(b"w"), 60) == (b"v", True)  # memory
            assert await book(other, clock) == 3  # shared
            health = backend.health()
            assert isinstance(backend, SharedBackend) and backend.slots.degraded is False
    assert health["degraded"] is True and "sqlite cache unavailable" in health["warning"]
    assert str(dirs.cache) in health["warning"]
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1  # the one process that used it


async def test_a_file_the_user_names_holds_both(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "mine.sqlite3"
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        await book(backend, clock)
        await backend.cache.get_or_fetch("q", lambda: _value(b"v"), 60)
        await backend.settle()
        assert backend.health()["cache_location"] == backend.health()["location"] == str(path)
    finally:
        await backend.aclose()
    assert tables(path) == {"plans", "starts", "records", "counters", "peers", "cache", "leases"}
    assert listing(tmp_path) == ["mine.sqlite3"]  # no cache file beside it


# ---------------------------------------------------------------- the move from the cache directory, once


async def _older_versions_file(dirs: Dirs, clock: FakeClock, count: int) -> None:
    """What versions before issue 35 left: one file in the cache directory with everything (the layout a named
    file still has), a month's count of ``count``, a learned plan, a breaker and a cached answer."""
    old = await open_state(f"sqlite://{dirs.legacy}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    try:
        await book(old, clock, count)
        await old.limiter("brave", rate=None, family="search").change(lambda p: p.learned_as(20, 20))
        await old.records.put("breaker", {"state": "open"})
        await old.cache.get_or_fetch("q", lambda: _value(b"old answer"), 60)
        await old.settle()
    finally:
        await old.aclose()


async def test_the_counters_of_an_older_version_are_moved_once(dirs: Dirs, clock: FakeClock) -> None:
    await _older_versions_file(dirs, clock, 7)
    async with opened(dirs, clock) as backend:
        assert await backend.slots.count(MONTH, clock()) == 7  # exactly the month's count
        assert (await backend.limiter("brave", rate=None, family="search").snapshot())["plan_rate"] == 20.0
        assert await backend.records.get("breaker") == {"state": "open"}
        assert await backend.cache.get_or_fetch("q", lambda: _value(b"fetched"), 60) == (b"fetched", False)
        assert await book(backend, clock) == 8
    assert not dirs.legacy.exists()  # gone from the cache directory: never read again
    await _older_versions_file(dirs, clock, 5)  # an older version still in use writes it again: not moved twice
    async with opened(dirs, clock) as backend:
        assert await backend.slots.count(MONTH, clock()) == 8
    assert dirs.legacy.exists()


async def test_a_new_state_file_does_not_look_for_an_older_file_again(dirs: Dirs, clock: FakeClock) -> None:
    async with opened(dirs, clock) as backend:  # no older file: nothing to move, and the state file says so
        assert await book(backend, clock, 2) == 2
    await _older_versions_file(dirs, clock, 9)
    async with opened(dirs, clock) as backend:
        assert await backend.slots.count(MONTH, clock()) == 2


def test_processes_starting_together_move_the_count_once(dirs: Dirs) -> None:
    """Four processes open the new state file at the same moment beside an older version's file with a count of 6:
    one moves it under the state file's write lock; the others wait, find it done and read nothing."""
    with contextlib.closing(sqlite3.connect(_made_dirs(dirs.legacy), isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL, expires REAL NOT NULL)")
        conn.execute("INSERT INTO counters VALUES (?, 6, ?)", (MONTH, FOREVER))
    results = run_workers(
        4, "--url", f"sqlite://{dirs.state}", "--cache-file", str(dirs.cache), "--mode", "acquire", "--count", "0"
    )
    assert [r["health"]["degraded"] for r in results] == [False] * 4
    with contextlib.closing(sqlite3.connect(dirs.state)) as conn:
        assert conn.execute("SELECT n FROM counters WHERE name = ?", (MONTH,)).fetchone() == (6,)
    assert not dirs.legacy.exists()


def _made_dirs(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def test_an_older_file_that_cannot_be_read_warns_once_and_starts_afresh(
    dirs: Dirs, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    _made_dirs(dirs.legacy).write_bytes(b"not a database, just garbage " * 200)
    with caplog.at_level(logging.WARNING):
        async with opened(dirs, clock) as backend:
            assert await book(backend, clock) == 1
            assert backend.health()["degraded"] is False
        async with opened(dirs, clock) as backend:  # the next start does not try again
            assert await book(backend, clock) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and str(dirs.legacy) in warnings[0] and "starting afresh" in warnings[0]


async def test_rows_an_older_file_holds_that_no_version_wrote_are_left_behind(dirs: Dirs, clock: FakeClock) -> None:
    await _older_versions_file(dirs, clock, 4)
    with contextlib.closing(sqlite3.connect(dirs.legacy, isolation_level=None)) as conn:
        conn.execute("INSERT INTO counters VALUES ('brave:k:month:bad', -3, 1e12)")
        conn.execute("INSERT INTO counters VALUES ('brave:k:month:text', 'many', 1e12)")
        conn.execute("INSERT INTO starts VALUES ('brave|', 'soon')")
    async with opened(dirs, clock) as backend:
        assert await backend.slots.count(MONTH, clock()) == 4
    with contextlib.closing(sqlite3.connect(dirs.state)) as conn:
        assert conn.execute("SELECT name FROM counters").fetchall() == [(MONTH,)]
        assert conn.execute("SELECT count(*) FROM starts WHERE typeof(t) != 'real'").fetchone() == (0,)


def test_a_process_that_waited_for_the_move_does_not_copy_again_even_when_the_old_file_stays(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two openings both find the state file unmarked and queue for its write lock (held meanwhile by a third
    connection); the old file cannot be removed (an older version on Windows holds it open). The second to get the
    lock looks again, finds the move done and copies nothing."""
    with contextlib.closing(sqlite3.connect(_made_dirs(dirs.legacy), isolation_level=None)) as conn:
        conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL, expires REAL NOT NULL)")
        conn.execute("INSERT INTO counters VALUES (?, 6, ?)", (MONTH, FOREVER))
    monkeypatch.setattr(sqlite_legacy, "_remove", lambda legacy: None)
    openings = [sqlite_file.connect(_made_dirs(dirs.state), tables=sqlite_file.STATE_TABLES) for _ in range(2)]
    queued = [threading.Event() for _ in openings]

    def tell(event: threading.Event) -> Callable[[str], None]:
        return lambda sql: event.set() if sql == "BEGIN IMMEDIATE" else None

    for conn, event in zip(openings, queued, strict=True):
        conn.set_trace_callback(tell(event))
    holder = sqlite3.connect(dirs.state, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    threads = [threading.Thread(target=sqlite_legacy.adopt_legacy, args=(c, dirs.legacy)) for c in openings]
    try:
        for thread in threads:
            thread.start()
        assert all(event.wait(10) for event in queued)  # both passed the first look and wait for the lock
        holder.execute("COMMIT")
        for thread in threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in threads)
        assert holder.execute("SELECT n FROM counters WHERE name = ?", (MONTH,)).fetchone() == (6,)
    finally:
        holder.close()
        for conn in openings:
            conn.close()
