"""Issue 43 item 9, in one process: what a process still owes the state file when it ends is kept in an owner-only
journal file beside it, and added exactly once by whichever process next reaches the file, even when two race."""

from __future__ import annotations

import logging
import stat
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from brave_search_mcp.state.base import StoreUnavailable
from brave_search_mcp.state.journal import Journal
from brave_search_mcp.state.shared import SharedBackend
from testkit.clock import FakeClock
from tests.test_state_outage import MONTH, RETRY, Flaky, book, plain
from tests.test_state_outage import flaky as outage_flaky

pytestmark = pytest.mark.anyio


def flaky(path: Path, clock: FakeClock) -> AbstractAsyncContextManager[tuple[SharedBackend, Flaky]]:
    """A process on the file ``path`` whose store fails on command, keeping its journal there."""
    return outage_flaky(path, clock, Journal(path))


def _journals(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.owed-*"))


async def test_what_an_ending_process_owes_is_added_once_by_the_next_ones(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "s.db"
    async with flaky(path, clock) as (backend, store):
        assert await book(backend, clock, 3) == [1, 2, 3]
        store.fault = StoreUnavailable("locked")
        assert await book(backend, clock, 2) == [4, 5]
    (journal,) = _journals(path)
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    async with flaky(path, clock) as (first, store), plain(path, clock) as second:
        store.fault = StoreUnavailable("locked again")
        assert await book(first, clock) == [6]  # it read the journal; its repayment failed: the batches are owed
        assert await second.slots.count(MONTH, clock()) == 5  # the other one read it too and added it
        assert _journals(path) == []
        store.fault = None
        await clock.sleep(RETRY)
        assert await first.slots.count(MONTH, clock()) == 6  # the same batches again: added once, and its own one
        assert await second.slots.count(MONTH, clock()) == 6
    assert _journals(path) == []


async def test_a_process_on_memory_counts_on_from_the_journals(tmp_path: Path, clock: FakeClock) -> None:
    """The cap holds across processes while the file refuses writes: a new process starts from the count it can
    still read and the requests the journals hold."""
    path = tmp_path / "s.db"
    async with flaky(path, clock) as (backend, store):
        await book(backend, clock, 2)
        store.fault = StoreUnavailable("locked")
        await book(backend, clock, 2)  # 4: two of them owed
    async with flaky(path, clock) as (later, store):
        store.fault = StoreUnavailable("locked")
        assert await book(later, clock, 2, cap=5) == [5, -5]


async def test_a_damaged_journal_file_is_skipped_with_a_warning(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.db"
    async with plain(path, clock) as backend:
        await book(backend, clock, 1)
    broken = tmp_path / "s.db.owed-broken.json"
    broken.write_text('[{"counter": 5}]')
    with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
        async with plain(path, clock) as backend:
            assert await book(backend, clock) == [2]
            assert backend.health()["degraded"] is False
    assert [r.getMessage() for r in caplog.records].count(
        f"state: journal file {broken} holds entries this version did not write; skipped"
    ) == 1
    assert not broken.exists()  # read once, not at every start


async def test_a_process_already_on_memory_adds_what_ended_processes_left_meanwhile(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A server on memory since the file locked (it knew the count, 2) and a CLI process that booked 2 and ended
    meanwhile: the server's cap of 5 leaves room for one more, not three."""
    path = tmp_path / "s.db"
    async with flaky(path, clock) as (server, server_store):
        await book(server, clock, 2)
        server_store.fault = StoreUnavailable("locked")
        async with flaky(path, clock) as (cli, cli_store):
            cli_store.fault = StoreUnavailable("locked")
            assert await book(cli, clock, 2) == [1, 2]  # the file unreadable here too, no journal yet: from 0
        assert await book(server, clock, 3, cap=5) == [5, -5, -5]
        server_store.fault = None
        await clock.sleep(RETRY)
        assert await server.slots.count(MONTH, clock()) == 5
    assert _journals(path) == []
