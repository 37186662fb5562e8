"""A miss's answer is stored after the reply (``state.later``): never lost, never a failed call, settled at close."""

from __future__ import annotations

import logging
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
