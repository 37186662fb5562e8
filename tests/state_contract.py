"""Behaviour every state backend must show, written once and run against memory, SQLite and Redis."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from brave_search_mcp.models.errors import RateLimited
from brave_search_mcp.ratelimit.limiter import LATE_SECONDS, GateClosed, SlotUnavailable
from brave_search_mcp.ratelimit.plan import WINDOW_MARGIN_FACTOR, horizon
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.shared import Store
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.state_worker import run_workers, spawn

# 20 rps, burst 2: a 0.1 s window (plus the margin)
RATE, BURST = 20.0, 2
HORIZON = horizon(RATE, BURST)


async def starts_of(
    backend: StateBackend, clock: FakeClock, n: int, *, rate: float | None = RATE, burst: int = BURST
) -> list[float]:
    """Acquire ``n`` times one after another and return the clock at each start."""
    limiter = backend.limiter("brave", rate=rate, burst=burst, family="search" if rate is None else "")
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
    """A contradicting 429 halves the rate in force (once per second); clean minutes bring it back 10 % each."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    await limiter.change(lambda p: p.penalized(clock()))
    snap = await limiter.snapshot()
    assert snap["rate"] == RATE / 2 and snap["plan_rate"] == RATE and snap["penalized"] is True
    await limiter.change(lambda p: p.penalized(clock()))  # same second: a burst of 429s from one overload counts once
    assert (await limiter.snapshot())["rate"] == RATE / 2
    # the slower rate is what the window enforces now, one start at a time
    t0 = clock()
    starts = await starts_of(backend, clock, 3)
    assert starts[2] - t0 >= 2 / (RATE / 2) * WINDOW_MARGIN_FACTOR
    await clock.sleep(61)
    assert (await limiter.snapshot())["rate"] == pytest.approx(RATE / 2 * 1.1)
    await clock.sleep(60 * 10)
    snap = await limiter.snapshot()
    assert snap["rate"] == RATE and snap["penalized"] is False


async def penalty_has_a_floor(backend: StateBackend, clock: FakeClock) -> None:
    """However many 429s, the rate stays at or above 0.5 rps."""
    limiter = backend.limiter("brave", rate=1.0, burst=1)
    for _ in range(6):
        await limiter.change(lambda p: p.penalized(clock()))
        await clock.sleep(10)
    assert (await limiter.snapshot())["rate"] == 0.5


async def probe_then_learned_plan(backend: StateBackend, clock: FakeClock) -> None:
    """A key never seen: one request alone; the others wait for its answer, then go at the plan's rate, whole bursts
    at once (issue 44: no ramp)."""
    limiter = backend.limiter("brave", rate=None, family="search")
    assert (await limiter.snapshot())["rate"] is None
    t0 = clock()
    await limiter.acquire()  # the probe
    waiting: list[float] = []

    async def second() -> None:
        await limiter.acquire()
        waiting.append(clock())

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await clock.sleep(0.2)  # the probe's round trip; the second caller polls meanwhile
        assert waiting == []
        await limiter.change(lambda p: p.learned_as(50.0, 50))
    assert t0 + 0.2 <= waiting[0] < t0 + 5.0  # freed by the answer, not by the probe's 10 s hold
    snap = await limiter.snapshot()
    assert (snap["rate"], snap["at_once"], snap["plan_rate"], snap["stated"]) == (50.0, 50, 50.0, True)
    await clock.sleep(2.0)
    t1 = clock()
    assert [t - t1 for t in await starts_of(backend, clock, 10, rate=None)] == [0.0] * 10  # one burst
    await limiter.change(lambda p: p.learned_as(5.0, 5))  # a lower plan applies at once
    assert (await limiter.snapshot())["rate"] == 5.0
    with pytest.raises(ValueError):
        await limiter.change(lambda p: p.learned_as(0.0, 1))


async def block_until_pauses(backend: StateBackend, clock: FakeClock) -> None:
    """After the upstream says the window is spent, no start happens before the given time."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    until = clock() + 2.5
    await limiter.change(lambda p: p.blocked(until))
    assert (await limiter.snapshot())["blocked_until"] == until
    await limiter.acquire()
    assert clock() >= until
    later = clock() + 5
    await limiter.change(lambda p: p.blocked(later))
    with pytest.raises(SlotUnavailable):
        await limiter.acquire(deadline=clock() + 1)


async def other_family_fits_the_keys_window(backend: StateBackend, clock: FakeClock) -> None:
    """An Answers request waits for the key's search window too, and counts in it (one window per key)."""
    search = backend.limiter("key", rate=1.0, burst=1, family="search", primary="search")
    answers = backend.limiter("key", rate=2.0, burst=2, family="answers", primary="search")
    t0 = clock()
    await search.acquire()
    await answers.acquire()
    one = horizon(1, 1)
    assert clock() - t0 == pytest.approx(one, abs=0.01)  # the key's 1/s window, not only the answers' own 2/s
    await search.acquire()
    assert clock() - t0 == pytest.approx(2 * one, abs=0.02)  # and the answer's start counted in the key's window


async def late_start_counts_from_when_it_left(backend: StateBackend, clock: FakeClock) -> None:
    """A start whose request left late is counted from when it left, in the key's one window, once (told twice,
    as a lost reply's retry would); one that left within ``LATE_SECONDS`` of its booking stays where it was."""
    search = backend.limiter("key", rate=1.0, burst=1, family="search", primary="search")
    answers = backend.limiter("key", rate=2.0, burst=2, family="answers", primary="search")
    one = horizon(1, 1)
    t0 = clock()
    grant = await search.acquire()
    await clock.sleep(0.3)
    for _ in range(2):
        await search.retime(grant, clock())
    await search.acquire()
    assert clock() - t0 == pytest.approx(0.3 + one, abs=0.01)  # a window from when it left, not from its booking
    t1 = clock()
    grant = await answers.acquire()  # the other family's start is the key's too: moved in both windows
    assert clock() - t1 == pytest.approx(one, abs=0.01)
    t1 = clock()
    await clock.sleep(0.2)
    await answers.retime(grant, clock())
    await search.acquire()
    assert clock() - t1 == pytest.approx(0.2 + one, abs=0.01)
    grant = await search.acquire()
    t2 = clock()
    await clock.sleep(LATE_SECONDS / 2)
    await search.retime(grant, clock())  # prompt enough: not moved (no store call)
    await search.acquire()
    assert clock() - t2 == pytest.approx(one, abs=0.01)


async def starts_counted_in_a_window(backend: StateBackend, clock: FakeClock) -> None:
    """The starts the key's window holds between two times, the ends as ``(since, until]``, a moved one where it
    moved to, another family's counted in the key's (primary) window, a key never seen holding none."""
    search = backend.limiter("key", rate=50.0, burst=50, family="search", primary="search")
    answers = backend.limiter("key", rate=2.0, burst=2, family="answers", primary="search")
    t0 = clock()
    grants = []
    for _ in range(3):
        grants.append(await search.acquire())
        await clock.sleep(0.1)
    await answers.acquire()  # at t0 + 0.3
    await search.retime(grants[0], t0 + 0.25)  # the first left late: counted at t0 + 0.25
    counted = search.slots.started
    assert await counted(search.ask, t0 - 1, t0 + 1, clock()) == 4
    assert await counted(search.ask, t0, t0 + 0.2, clock()) == 2  # t0 + 0.1 and t0 + 0.2; t0's start moved away
    assert await counted(answers.ask, t0 + 0.2, t0 + 0.31, clock()) == 2  # t0 + 0.25 and the answer at t0 + 0.3
    assert await counted(backend.limiter("never seen", rate=1.0, burst=1).ask, t0 - 1, t0 + 1, clock()) == 0


async def quota_gate_half_opens(backend: StateBackend, clock: FakeClock) -> None:
    """A spent month refuses starts until the reset, except one trial every ``every`` seconds (all processes)."""
    limiter = backend.limiter("brave", rate=RATE, burst=BURST)
    now = clock()
    await limiter.change(lambda p: p.quota_closed(now + 16 * 86400, now, 600.0))
    with pytest.raises(GateClosed) as closed:
        await limiter.acquire()
    assert closed.value.wait == pytest.approx(600.0)
    await clock.sleep(600)
    await limiter.acquire()  # the trial
    with pytest.raises(GateClosed):
        await limiter.acquire()  # the next trial is 10 minutes away again
    await limiter.change(lambda p: p.quota_opened())  # the trial was answered: a new month or a bigger plan
    await limiter.acquire()


async def month_counter_books_to_the_cap(backend: StateBackend, clock: FakeClock) -> None:
    """Bookings stop at the cap; a request given back frees its place; the counter expires."""
    slots = backend.slots
    now = clock()
    assert [await slots.book("k:month:2026-11", 2, now + 100, now) for _ in range(3)] == [
        (True, 1),
        (True, 2),
        (False, 2),
    ]
    await slots.unbook("k:month:2026-11")
    assert await slots.count("k:month:2026-11", now) == 1
    assert await slots.book("k:month:2026-11", None, now + 100, now) == (True, 2)
    assert await slots.count("other", now) == 0
    if backend.name != "redis":  # Redis expires keys on its own (real) clock
        await clock.sleep(101)
        assert await slots.count("k:month:2026-11", clock()) == 0


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


async def store_lease_then_value(store: Store, now: float) -> None:
    """A miss's two store operations: a live value or else the single-flight lease (one holder at a time), then
    the value stored and the lease released together (only by its holder; a failed fetch stores nothing)."""
    assert await store.cache_get_or_lease("q", "a", now, now + 30) == (None, True)
    assert await store.cache_get_or_lease("q", "b", now, now + 30) == (None, False)  # a holds it
    await store.cache_put_release("q", "b", None, now + 60, now)  # not b's lease to give back: it stays a's
    assert await store.cache_get_or_lease("q", "b", now, now + 30) == (None, False)
    assert await store.cache_get_or_lease("e", "b", now, now + 30) == (None, True)
    await store.cache_put_release("e", "b", None, now + 60, now)  # b's fetch failed: nothing stored, lease freed
    assert await store.cache_get_or_lease("e", "c", now, now + 30) == (None, True)
    await store.cache_put_release("q", "a", b"answer", now + 60, now)
    assert await store.cache_get_or_lease("q", "c", now, now + 30) == (b"answer", False)  # no lease with a value
    await store.cache_put_release("e", "c", b"", now + 60, now)  # an empty answer is an answer
    assert await store.cache_get_or_lease("e", "d", now, now + 30) == (b"", False)


# ---------------------------------------------------------------- real processes, real time (small totals)


def two_processes_share_one_limiter(url: str, granted: Callable[[], list[float]]) -> None:
    """Starts the shared store granted never exceed the burst per window across both processes.

    ``granted`` reads the start times the store itself recorded: a worker's own stamp, taken after ``acquire``
    returns, can lag by however long a loaded machine leaves the process unscheduled, and would then show three
    starts in one window where the limiter granted two.
    """
    # A long barrier: the store forgets starts older than its window, so both processes must really overlap
    # even when a loaded machine takes seconds to start one of them.
    results = run_workers(
        2, "--url", url, "--mode", "acquire", "--count", "6", "--rate", "20", "--burst", "2", barrier=6.0
    )
    assert sum(len(r["starts"]) for r in results) == 12 and all(not r["errors"] for r in results)
    assert all(r["health"]["backend"] != "memory" and not r["health"]["degraded"] for r in results), [
        r["health"] for r in results
    ]  # a worker on its own memory shares nothing (and its starts are not in the store)
    starts = sorted(granted())
    assert len(starts) == 12, starts
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
