"""What a cache miss costs the SQLite file (issue 22 item 3): few transactions, no statement that cannot change
anything, no page written only to be freed, one checkpoint thread; the bounds and the rule as before."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from brave_search_mcp.brave.shared_state import FORMAT, SharedUpstream, pack
from brave_search_mcp.ratelimit.plan import KEEP_STARTS_SECONDS, Ask, PlanState
from brave_search_mcp.state import sqlite_conn, sqlite_file
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.shared import SharedBackend
from brave_search_mcp.state.sqlite import SqliteStore
from testkit.clock import FakeClock
from tests import state_contract as contract


@pytest.fixture
async def backend(clock: FakeClock, tmp_path: Path) -> AsyncIterator[SharedBackend]:
    opened = await open_state(
        f"sqlite://{tmp_path / 's.db'}", cache_max_entries=3, clock=clock, sleep=clock.sleep, lease_seconds=10.0
    )
    assert isinstance(opened, SharedBackend)
    yield opened
    await opened.aclose()


def _store(backend: SharedBackend) -> SqliteStore:
    assert isinstance(backend.store, SqliteStore)
    return backend.store


@contextlib.contextmanager
def _statements(store: SqliteStore) -> Iterator[list[str]]:
    """Every statement the store's connections run meanwhile."""
    seen: list[str] = []
    connections = {id(c): c for c in (store.state.connection, store.cache.connection)}.values()
    for conn in connections:
        conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        for conn in connections:
            conn.set_trace_callback(None)


async def _value(v: bytes) -> bytes:
    return v


@pytest.mark.anyio
async def test_store_lease_then_value(backend: SharedBackend, clock: FakeClock) -> None:
    await contract.store_lease_then_value(backend.store, clock())
    store, now = _store(backend), clock()
    assert await store.cache_get_or_lease("dead", "a", now, now + 10) == (None, True)
    assert await store.cache_get_or_lease("dead", "b", now + 9.9, now + 20) == (None, False)
    assert await store.cache_get_or_lease("dead", "b", now + 10, now + 20) == (None, True)  # its holder died


@pytest.mark.anyio
async def test_a_miss_is_two_transactions_and_a_hit_one(backend: SharedBackend) -> None:
    async with backend.owned():  # a lifespan's task group: the store and release run beside the reply
        with _statements(_store(backend)) as seen:
            assert await backend.cache.get_or_fetch("k", lambda: _value(b"v"), 60) == (b"v", False)
            assert seen.count("COMMIT") == 1  # the second (store and release) starts once the caller yields
            await backend.settle()
    first = seen.index("COMMIT")  # every statement inside one of two transactions: none on its own
    assert seen[0] == seen[first + 1] == "BEGIN IMMEDIATE" and seen[-1] == "COMMIT" and seen.count("COMMIT") == 2
    with _statements(_store(backend)) as seen:
        assert await backend.cache.get_or_fetch("k", lambda: _value(b"w"), 60) == (b"v", True)
    assert seen[0] == "BEGIN IMMEDIATE" and seen[-1] == "COMMIT" and seen.count("COMMIT") == 1


@pytest.mark.anyio
async def test_eviction_runs_only_when_over_the_bound_and_keeps_the_newest(
    backend: SharedBackend, clock: FakeClock
) -> None:
    """Under the bound no eviction statement runs; over it, the least recently used go (among entries used at the
    same moment, the lowest keys, as the store has always chosen)."""
    evictions: list[str] = []
    for key in ("b", "a", "c"):  # all stored at the same moment
        with _statements(_store(backend)) as seen:
            await backend.cache.get_or_fetch(key, lambda: _value(b"v"), 60)
            await backend.settle()  # (``state.later``)
        evictions += [s for s in seen if "ORDER BY used" in s]
    assert evictions == []
    await backend.cache.get_or_fetch("d", lambda: _value(b"v"), 60)  # one over: "a" goes
    await backend.settle()
    assert [(await backend.cache.get_or_fetch(k, lambda: _value(b"new"), 60))[1] for k in "bcd"] == [True] * 3
    await clock.sleep(1)
    assert (await backend.cache.get_or_fetch("a", lambda: _value(b"new"), 60))[1] is False  # "b" went now
    await backend.settle()
    assert (await backend.cache.stats())["entries"] == 3


def test_freed_pages_are_not_written_over(tmp_path: Path) -> None:
    """An evicted answer's dozen freed pages are not zeroed page by page (builds that secure-delete by default
    did): the next answer reuses them."""
    with contextlib.closing(sqlite_file.connect(tmp_path / "s.db")) as conn:
        assert conn.execute("PRAGMA secure_delete").fetchone() == (2,)  # FAST


@pytest.mark.anyio
async def test_a_plan_another_process_wrote_is_read_as_written(backend: SharedBackend, clock: FakeClock) -> None:
    """The store remembers the plans it parsed by their stored text: another process's write is a new text."""
    limiter = backend.limiter("brave", rate=None, family="search")
    await limiter.change(lambda p: p.learned_as(20, 20))
    assert (await limiter.snapshot())["plan_rate"] == 20.0
    other = PlanState.known(5, 5)
    with contextlib.closing(sqlite3.connect(_store(backend).location(), isolation_level=None)) as conn:
        conn.execute("UPDATE plans SET state = ? WHERE upstream = ?", (json.dumps(other.to_json()), "brave|search"))
    assert await backend.slots.modify(Ask("brave", "search"), lambda p: p) == other
    decision = await backend.slots.reserve(Ask("brave", "search"), clock())
    assert decision.granted and decision.plan == other


@pytest.mark.anyio
async def test_a_new_months_counter_starts_at_one_and_the_spent_ones_go(
    backend: SharedBackend, clock: FakeClock
) -> None:
    slots, now = backend.slots, clock()
    assert [await slots.book("k:month:1", None, now + 10, now) for _ in range(2)] == [(True, 1), (True, 2)]
    await clock.sleep(11)
    later = clock()
    assert await slots.book("k:month:1", 5, later + 10, later) == (True, 1)  # the old count had expired
    assert await slots.book("k:month:2", 5, later + 10, later) == (True, 1)
    with contextlib.closing(sqlite3.connect(_store(backend).location())) as conn:
        assert conn.execute("SELECT name, n FROM counters ORDER BY name").fetchall() == [
            ("k:month:1", 1),
            ("k:month:2", 1),
        ]


@pytest.mark.anyio
async def test_one_long_lived_thread_runs_every_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_conn, "CHECKPOINT_EVERY", 1)
    started: list[threading.Thread] = []
    start = threading.Thread.start

    def spy(thread: threading.Thread) -> None:
        if thread.name == "sqlite-checkpoint":
            started.append(thread)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", spy)
    backend = await open_state(f"sqlite://{tmp_path / 's.db'}", cache_max_entries=10)
    try:
        for n in range(5):  # ten operations, ten checkpoints asked for
            await backend.cache.get_or_fetch(f"k{n}", lambda: _value(b"v" * 10_000), 60)
        assert len(started) == 1 and started[0].is_alive()  # one thread, waiting for the next request
    finally:
        await backend.aclose()
    assert not started[0].is_alive()


@pytest.mark.anyio
async def test_a_miss_hands_back_the_answer_it_fetched_and_a_hit_the_stored_one(backend: SharedBackend) -> None:
    """The 50 KB body a miss fetched is not copied back out of the value stored for the other processes."""
    shared = SharedUpstream(backend, "brave:k")
    body = b'{"web": {"results": []}}' * 2000

    async def fetch() -> tuple[int, bytes, str]:
        return 200, body, "identity"

    (status, got, encoding), hit = await shared.cached("web?q=x", fetch, 60)
    assert (status, got is body, encoding, hit) == (200, True, "identity", False)
    await backend.settle()  # (``state.later``)
    assert await shared.cached("web?q=x", fetch, 60) == ((200, body, "identity"), True)
    assert await backend.cache.get_or_fetch(f"brave:k:{FORMAT}:web?q=x", lambda: _value(b"unused"), 60) == (
        pack(200, body),
        True,
    )


OLD_SCHEMA = sqlite_file.ALL_TABLES.replace(" WITHOUT ROWID", "")  # the leases as every version before made them


def _leases_sql(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("SELECT sql FROM sqlite_master WHERE name = 'leases'").fetchone()[0])


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    """A state file an older version made: its leases in a rowid table, one lease held by a running process."""
    path = tmp_path / "s.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(OLD_SCHEMA)
        conn.execute("INSERT INTO leases VALUES ('held', 'old-process', 2e9)")
    return path


@pytest.mark.anyio
async def test_an_older_files_leases_move_to_one_b_tree_and_stay_held(old_file: Path, clock: FakeClock) -> None:
    assert "WITHOUT ROWID" not in _leases_sql(old_file)
    backend = await open_state(f"sqlite://{old_file}", cache_max_entries=3, clock=clock, sleep=clock.sleep)
    try:
        assert backend.health()["degraded"] is False
        assert _leases_sql(old_file).endswith("WITHOUT ROWID")
        assert isinstance(backend, SharedBackend)
        store = _store(backend)
        assert await store.cache_get_or_lease("held", "new", clock(), clock() + 30) == (None, False)
        with contextlib.closing(sqlite3.connect(old_file, isolation_level=None)) as older:  # its statements still run
            older.execute("DELETE FROM leases WHERE key = ? AND owner = ?", ("held", "old-process"))
            older.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", ("other", "old-process", 2e9))
            assert older.execute("SELECT owner, expires FROM leases WHERE key = 'other'").fetchone() == (
                "old-process",
                2e9,
            )
        assert await store.cache_get_or_lease("held", "new", clock(), clock() + 30) == (None, True)
    finally:
        await backend.aclose()
    with contextlib.closing(sqlite_file.connect(old_file)):
        pass  # opening a migrated file again changes nothing
    assert _leases_sql(old_file).endswith("WITHOUT ROWID")


def test_a_migration_that_cannot_run_now_leaves_the_file_working(
    old_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the write lock past the busy timeout: the file opens as it is, the next opening
    migrates it."""
    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_MS", 50)
    with contextlib.closing(sqlite3.connect(old_file, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        with contextlib.closing(sqlite_file.connect(old_file)) as conn:
            assert conn.execute("SELECT owner FROM leases WHERE key = 'held'").fetchone() == ("old-process",)
        assert "WITHOUT ROWID" not in _leases_sql(old_file)
        other.execute("COMMIT")
    with contextlib.closing(sqlite_file.connect(old_file)) as conn:
        assert conn.execute("SELECT owner FROM leases WHERE key = 'held'").fetchone() == ("old-process",)
    assert _leases_sql(old_file).endswith("WITHOUT ROWID")


@pytest.mark.anyio
async def test_past_starts_are_deleted_a_second_at_a_time(backend: SharedBackend, clock: FakeClock) -> None:
    """Starts past keeping (never read again) are deleted once they span PRUNE_BATCH_SECONDS, not one page write
    per reservation; the store stays bounded."""
    limiter = backend.limiter("brave", rate=1000.0, burst=1000)
    ask, store = limiter.ask, _store(backend)

    async def deletes() -> int:
        with _statements(store) as seen:
            assert (await backend.slots.reserve(ask, clock())).granted
        return sum(s.startswith("DELETE FROM starts") for s in seen)

    assert [await deletes() for _ in range(3)] == [0, 0, 0]
    await clock.sleep(KEEP_STARTS_SECONDS + 0.5)  # past keeping, but only half a second's worth
    assert await deletes() == 0
    await clock.sleep(0.6)
    assert await deletes() == 1
    with contextlib.closing(sqlite3.connect(store.location())) as conn:
        assert conn.execute("SELECT count(*) FROM starts").fetchone() == (2,)  # the two newest
