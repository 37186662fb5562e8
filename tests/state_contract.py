"""Behaviour every state backend must show, written once and run against memory, SQLite and Redis."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from brave_search_mcp.models.errors import RateLimited
from brave_search_mcp.ratelimit.limiter import SlotUnavailable
from brave_search_mcp.state.base import StateBackend
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.state_worker import run_workers, spawn

# 20 rps, burst 2: a 0.1 s window (+3 % + 5 ms margin)
RATE, BURST = 20.0, 2
HORIZON = BURST / RATE * 1.03 + 0.005


async def starts_of(
    backend: StateBackend, clock: FakeClock, n: int, *, rate: float = RATE, burst: int = BURST
) -> list[float]:
    """Acquire ``n`` times one after another and return the clock at each start."""
    limiter = backend.limiter("brave", rate=rate, burst=burst)
    out = []
    for _ in range(n):
        await limiter.acquire()
        out.append(clock())
    return out


async def burst_then_window(backend: StateBackend, clock: FakeClock) -> None:
    """A burst starts at once; the next start waits for the window to slide."""
    t0 = clock()
    starts = await starts_of(backend, clock, 3)
    assert starts[:2] == [t0, t0]
    assert HORIZON - 1e-6 <= starts[2] - t0 < HORIZON + 0.01


async def deadline_fails_fast(backend: StateBackend, clock: FakeClock) -> None:
    """A full window and a deadline before the next slot: RATE_LIMITED at once, with the wait, nothing slept."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    await limiter.acquire()
    await limiter.acquire()
    before, slept = clock(), len(clock.sleeps)
    with pytest.raises(SlotUnavailable) as info:
        await limiter.acquire(deadline=before + HORIZON / 2)
    assert isinstance(info.value, RateLimited)
    assert clock() == before and len(clock.sleeps) == slept
    wait = info.value.retry_after
    assert wait is not None and HORIZON - 0.01 <= wait <= HORIZON + 0.01
    assert info.value.details["retry_after_ms"] >= 1
    # a deadline after the next slot waits for it instead
    await limiter.acquire(deadline=before + HORIZON + 0.05)
    assert clock() - before >= HORIZON - 0.001


async def penalize_halves_and_recovers(backend: StateBackend, clock: FakeClock) -> None:
    """A contradicting 429 halves the rate in force (once per window); clean minutes bring it back 10 % each."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    await limiter.penalize()
    snap = await limiter.snapshot()
    assert snap["rate"] == RATE / 2 and snap["plan_rate"] == RATE and snap["penalized"] is True
    await limiter.penalize()  # same window: a burst of 429s from one overload counts once
    assert (await limiter.snapshot())["rate"] == RATE / 2
    # the slower rate is what the window enforces now: burst 2 at 10 rps
    t0 = clock()
    starts = await starts_of(backend, clock, 3)
    assert starts[2] - t0 >= 2 / (RATE / 2) * 1.03
    await clock.sleep(61)
    assert (await limiter.snapshot())["rate"] == pytest.approx(RATE / 2 * 1.1)
    await clock.sleep(60 * 10)
    snap = await limiter.snapshot()
    assert snap["rate"] == RATE and snap["penalized"] is False


async def penalty_has_a_floor(backend: StateBackend, clock: FakeClock) -> None:
    """However many 429s, the rate stays at or above 0.5 rps."""
    limiter = backend.limiter("brave", rate=1.0, burst=1)
    for _ in range(6):
        await limiter.penalize()
        await clock.sleep(10)
    assert (await limiter.snapshot())["rate"] == 0.5


async def update_learns_plan(backend: StateBackend, clock: FakeClock) -> None:
    """A higher plan from headers is approached by slow start (doubling per second), then fully used."""
    limiter = backend.limiter("brave", rate=1.0, burst=1)
    await limiter.update(50.0, 50)
    snap = await limiter.snapshot()
    assert (snap["rate"], snap["burst"], snap["plan_rate"], snap["plan_burst"]) == (1.0, 1, 50.0, 50)
    t0 = clock()
    starts = await starts_of(backend, clock, 2, rate=1.0, burst=1)
    assert starts[1] - t0 >= 1.0  # the reservation itself honours the ramp: still 1 rps in the first second
    assert (await limiter.snapshot())["rate"] == 2.0
    await limiter.update(50.0, 50)  # every answer repeats the plan: that must not restart the ramp
    await clock.sleep(5.0)
    snap = await limiter.snapshot()
    assert (snap["rate"], snap["burst"], snap["penalized"]) == (50.0, 50, False)
    t0 = clock()
    starts = await starts_of(backend, clock, 10, rate=1.0, burst=1)
    assert starts[-1] == t0  # ten at once: the learned burst, not the start value of 1
    await limiter.update(5.0, 5)  # a lower plan applies at once
    assert (await limiter.snapshot())["rate"] == 5.0
    with pytest.raises(ValueError):
        await limiter.update(0.0, 1)


async def block_until_pauses(backend: StateBackend, clock: FakeClock) -> None:
    """After Brave says the window is spent, no start happens before the given time."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    until = clock() + 2.5
    await limiter.block_until(until)
    assert (await limiter.snapshot())["blocked_until"] == until
    await limiter.acquire()
    assert clock() >= until
    await limiter.block_until(clock() + 5)
    with pytest.raises(SlotUnavailable):
        await limiter.acquire(deadline=clock() + 1)


async def cache_single_flight(backend: StateBackend) -> None:
    """Five concurrent identical requests make one upstream call; then it is a hit."""
    calls = 0

    async def fetch() -> bytes:
        nonlocal calls
        calls += 1
        await anyio.lowlevel.checkpoint()
        return b"answer"

    results: list[tuple[bytes, bool]] = []

    async def one() -> None:
        results.append(await backend.cache.get_or_fetch("web?q=x", fetch, 60.0))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
    assert calls == 1 and [v for v, _ in results] == [b"answer"] * 5
    assert await backend.cache.get_or_fetch("web?q=x", fetch, 60.0) == (b"answer", True)
    assert calls == 1
    await backend.cache.clear()
    assert await backend.cache.get_or_fetch("web?q=x", fetch, 60.0) == (b"answer", False)
    assert calls == 2


async def cache_errors_not_stored(backend: StateBackend) -> None:
    """A failed fetch reaches its caller and is not remembered: the next call fetches again."""

    async def broken() -> bytes:
        raise RuntimeError("upstream down")

    async def good() -> bytes:
        return b"ok"

    with pytest.raises(RuntimeError, match="upstream down"):
        await backend.cache.get_or_fetch("web?q=e", broken, 60.0)
    assert await backend.cache.get_or_fetch("web?q=e", good, 60.0) == (b"ok", False)


async def records_round_trip(backend: StateBackend) -> None:
    """Breaker records come back as stored; an absent one is None."""
    assert await backend.records.get("breaker:searxng") is None
    await backend.records.put("breaker:searxng", {"state": "open", "failures": 3})
    assert await backend.records.get("breaker:searxng") == {"state": "open", "failures": 3}


# ---------------------------------------------------------------- real processes, real time (small totals)


def two_processes_share_one_limiter(url: str, granted: Callable[[], list[float]]) -> None:
    """Starts the shared store granted never exceed the burst per window across both processes.

    ``granted`` reads the start times the store itself recorded: a worker's own stamp, taken after ``acquire``
    returns, can lag by however long a loaded machine leaves the process unscheduled, and would then show three
    starts in one window where the limiter granted two.
    """
    results = run_workers(2, "--url", url, "--mode", "acquire", "--count", "6", "--rate", "20", "--burst", "2")
    assert sum(len(r["starts"]) for r in results) == 12 and all(not r["errors"] for r in results)
    starts = sorted(granted())
    assert len(starts) == 12
    window = 2 / 20
    gaps = [starts[i + 2] - starts[i] for i in range(len(starts) - 2)]
    assert min(gaps) >= window, gaps  # never 3 starts in one 0.1 s window
    assert starts[-1] - starts[0] >= 5 * window  # 12 starts at 2 per window: the processes waited for each other


def killed_lease_holder_is_taken_over(url: str) -> None:
    """A process SIGKILLed while fetching leaves no stuck lock: another takes over when the lease expires."""
    with FakeBraveServer(rate_per_second=1000) as server:
        holder = spawn("--url", url, "--mode", "hold", "--lease", "1.0", "--query", "crash")
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "LEASED"
            leased_at = time.time()
        finally:
            holder.kill()
            holder.communicate(timeout=10)
        args = ["--url", url, "--mode", "fetch", "--lease", "1.0", "--query", "crash", "--upstream", server.base_url]
        (taker,) = run_workers(1, *args, barrier=0.0)
        assert taker["hits"] == [False] and taker["statuses"] == [200]
        assert taker["starts"][0] >= leased_at + 1.0 - 0.05  # it respected the dead holder's lease until expiry
        assert taker["starts"][0] < leased_at + 8.0  # ...and not much longer
        assert server.fake.hits() == 1


def same_query_one_upstream_request(url: str) -> None:
    """Four processes asking the same question at the same moment cost one upstream request."""
    with FakeBraveServer(rate_per_second=1000) as server:
        results = run_workers(4, "--url", url, "--mode", "fetch", "--query", "same", "--upstream", server.base_url)
        assert server.fake.hits() == 1
        assert sorted(h for r in results for h in r["hits"]) == [False, True, True, True]
