"""The per-process backend keeps the limiter's numbers and the cache behind the shared interface; URLs and paths."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from brave_search_mcp.config import Settings, parse_state_url
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from testkit.clock import FakeClock
from tests import state_contract as contract

CASES: list[Callable[[StateBackend, FakeClock], Awaitable[None]]] = [
    contract.burst_then_window,
    contract.deadline_fails_fast,
    contract.penalize_halves_and_recovers,
    contract.penalty_has_a_floor,
    contract.probe_then_learned_plan,
    contract.block_until_pauses,
    contract.other_family_fits_the_keys_window,
    contract.late_start_counts_from_when_it_left,
    contract.starts_counted_in_a_window,
    contract.quota_gate_half_opens,
    contract.month_counter_books_to_the_cap,
]


async def _memory(clock: FakeClock) -> StateBackend:
    return await open_state("memory", cache_max_entries=10, clock=clock, sleep=clock.sleep)


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
async def test_limiter_contract(case: Callable[[StateBackend, FakeClock], Awaitable[None]], clock: FakeClock) -> None:
    await case(await _memory(clock), clock)


@pytest.mark.anyio
async def test_cache_contract(clock: FakeClock) -> None:
    backend = await _memory(clock)
    await contract.cache_single_flight(backend)
    await contract.cache_errors_not_stored(backend)
    await contract.records_round_trip(backend)


@pytest.mark.anyio
async def test_cache_entries_expire_after_their_ttl(clock: FakeClock) -> None:
    backend = await _memory(clock)

    async def fetch() -> bytes:
        return b"v"

    assert await backend.cache.get_or_fetch("k", fetch, 5.0) == (b"v", False)
    await clock.sleep(4.9)
    assert await backend.cache.get_or_fetch("k", fetch, 5.0) == (b"v", True)
    await clock.sleep(0.2)
    assert await backend.cache.get_or_fetch("k", fetch, 5.0) == (b"v", False)


@pytest.mark.anyio
async def test_records_expire_and_are_copies(clock: FakeClock) -> None:
    backend = await _memory(clock)
    value = {"state": "open"}
    await backend.records.put("b", value, ttl=10)
    value["state"] = "changed by caller"
    assert await backend.records.get("b") == {"state": "open"}
    await clock.sleep(10)
    assert await backend.records.get("b") is None


@pytest.mark.anyio
async def test_memory_health_and_snapshot_name_the_backend(clock: FakeClock) -> None:
    backend = await _memory(clock)
    assert isinstance(backend, StateBackend) and backend.name == "memory"
    assert backend.health() == {"backend": "memory", "location": "process", "degraded": False}
    snap = await backend.limiter("brave", rate=1, burst=1).snapshot()
    assert snap["backend"] == "memory" and snap["rate"] == 1.0 and snap["blocked_until"] is None


@pytest.mark.anyio
async def test_same_upstream_gets_the_same_limiter_and_bad_limits_are_refused(clock: FakeClock) -> None:
    backend = await _memory(clock)
    assert backend.limiter("brave", rate=1, burst=1) is backend.limiter("brave", rate=5, burst=5)
    assert backend.limiter("brave", rate=1, burst=1) is not backend.limiter("searxng", rate=1, burst=1)
    for rate, burst in [(0, 1), (-1, 1), (float("nan"), 1), (1, 0), (1, 1.5), (True, 1)]:
        with pytest.raises(ValueError):
            backend.limiter(f"u{rate}{burst}", rate=rate, burst=burst)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_long_lived_process_keeps_a_bounded_number_of_host_limiters(clock: FakeClock) -> None:
    """read_url meets a new host per site: queues and numbers of the least recently used are forgotten."""
    from brave_search_mcp.state.base import MAX_UPSTREAMS

    backend = await _memory(clock)
    brave = backend.limiter("brave", rate=20, burst=20)
    for n in range(MAX_UPSTREAMS + 500):
        await backend.limiter(f"read:site{n}.example", rate=2, burst=2).acquire()
        if n % 1000 == 0:  # in use (the client asks for its queue): never the least recently used
            await backend.limiter("brave", rate=20, burst=20).acquire()
    assert len(backend._limiters) == MAX_UPSTREAMS  # type: ignore[attr-defined]
    assert len(backend.slots._plans) <= MAX_UPSTREAMS  # type: ignore[attr-defined]
    assert backend.limiter("brave", rate=20, burst=20) is brave


@pytest.mark.parametrize(
    ("url", "kind", "path"),
    [
        (None, "sqlite", None),
        ("", "sqlite", None),
        ("memory", "memory", None),
        ("sqlite:///var/tmp/s.db", "sqlite", Path("/var/tmp/s.db")),
        ("sqlite:////var/tmp/s.db", "sqlite", Path("/var/tmp/s.db")),
        ("redis://127.0.0.1:6379/0", "redis", None),
        ("rediss://:pw@cache.internal:6380/1", "redis", None),
    ],
)
def test_state_urls_parse(url: str | None, kind: str, path: Path | None) -> None:
    where = parse_state_url(url)
    assert (where.kind, where.path) == (kind, path)


@pytest.mark.parametrize(
    "url", ["sqlite://relative/path", "sqlite:relative.db", "redis://", "postgres://x/y", "memcache", "file:///x"]
)
def test_bad_state_urls_name_the_variable(url: str) -> None:
    with pytest.raises(ValueError, match="BRAVE_SEARCH_STATE"):
        parse_state_url(url)


def test_settings_name_both_default_files_from_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    for settings in (Settings.from_env(), Settings.from_env({"BRAVE_SEARCH_STATE": "memory"})):
        assert settings.state_default_path == str(tmp_path / "s/brave-search-mcp/state.sqlite3")
        assert settings.cache_default_path == str(tmp_path / "c/brave-search-mcp/cache.sqlite3")
