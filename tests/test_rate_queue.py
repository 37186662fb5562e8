"""The one queue (ratelimit/limiter.py) keeps parallel calls under a plan: fair queueing, live limits, clean
cancellation, estimates that refuse only on a known plan."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.ratelimit.plan import WINDOW_MARGIN_FACTOR, WINDOW_MARGIN_SECONDS, PlanState
from brave_search_mcp.state.memory import memory_limiter
from testkit.clock import FakeClock as FakeTime
from tests.test_cache import wait_until

pytestmark = pytest.mark.anyio

MARGIN = WINDOW_MARGIN_FACTOR
SLACK = WINDOW_MARGIN_SECONDS
ONE = 1.0 * MARGIN + SLACK  # how long one start holds the slot of a 1-start, 1-second window


class GatedTime(FakeTime):
    """Virtual clock whose sleep blocks until the test advances the clock past its deadline."""

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__(start)
        self._pending: list[tuple[float, anyio.Event]] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        entry = (self.now + seconds, anyio.Event())
        self._pending.append(entry)
        try:
            await entry[1].wait()
        finally:
            self._pending.remove(entry)

    @property
    def sleeping(self) -> int:
        return len(self._pending)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for deadline, event in self._pending:
            if deadline <= self.now + 1e-9:
                event.set()


def Throttle(rate: float, burst: int, *, clock: Callable[[], float], sleep: Callable[[float], Any]) -> Limiter:
    """A queue of this process with a known plan (the tests below predate the shared limiter's name)."""
    return memory_limiter("t", rate=rate, burst=burst, clock=clock, sleep=sleep)


async def test_ten_callers_at_one_per_second_start_in_order_one_window_apart() -> None:
    ft = FakeTime()
    throttle = Throttle(1.0, 1, clock=ft.clock, sleep=ft.sleep)
    starts: list[tuple[int, float, float]] = []

    async def caller(index: int) -> None:
        waited = (await throttle.acquire()).waited
        starts.append((index, ft.now, waited))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for index in range(10):
                tg.start_soon(caller, index)

    assert [index for index, _, _ in starts] == list(range(10))
    times = [t for _, t, _ in starts]
    assert times[0] == 1000.0
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert gaps == pytest.approx([1.0 * MARGIN + SLACK] * 9)
    # Each caller reports how long it queued, measured on the injected clock.
    assert [waited for _, _, waited in starts] == pytest.approx([t - 1000.0 for t in times])


async def test_burst_lets_a_full_window_start_at_once_then_slides() -> None:
    ft = FakeTime()
    throttle = Throttle(20.0, 20, clock=ft.clock, sleep=ft.sleep)
    with anyio.fail_after(5):
        grants = [await throttle.acquire() for _ in range(20)]
        assert ft.sleeps == []
        after = await throttle.acquire()
    assert [g.waited for g in grants] == [0.0] * 20
    assert [g.full for g in grants] == [False] * 19 + [True]  # the twentieth fills the window (``Decision.full``)
    assert after.waited == pytest.approx(1.0 * MARGIN + SLACK)
    assert not after.full  # the twenty before it have aged out of the window: it has room again


async def test_window_is_sliding_not_fixed() -> None:
    ft = FakeTime()
    throttle = Throttle(2.0, 2, clock=ft.clock, sleep=ft.sleep)  # 2 per 1 s
    with anyio.fail_after(5):
        await throttle.acquire()  # t=1000.0
        ft.now += 0.5
        await throttle.acquire()  # t=1000.5
        third = (await throttle.acquire()).waited  # waits for the first start to age out
        third_at = ft.now
        fourth = (await throttle.acquire()).waited  # waits for the second start to age out
    assert third == pytest.approx(ONE - 0.5)
    assert third_at == pytest.approx(1000.0 + ONE)
    assert fourth == pytest.approx(0.5)
    assert ft.now == pytest.approx(1000.5 + ONE)


async def test_cancelled_head_leaves_at_once_without_using_a_slot() -> None:
    gt = GatedTime()
    throttle = Throttle(1.0, 1, clock=gt.clock, sleep=gt.sleep)
    events: list[str] = []

    async def head(scope: anyio.CancelScope) -> None:
        with scope:
            await throttle.acquire()
            events.append("head started")
        events.append("head left")

    async def second() -> None:
        await throttle.acquire()
        events.append(f"second started at {gt.now:.3f}")

    with anyio.fail_after(5):
        await throttle.acquire()  # occupies the only slot at t=1000
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()
            tg.start_soon(head, scope)
            await wait_until(lambda: gt.sleeping == 1)
            tg.start_soon(second)
            await wait_until(lambda: throttle.waiting == 2)
            scope.cancel()
            await wait_until(lambda: "head left" in events)
            assert gt.now == 1000.0  # freed at once, no time passed
            # The second caller is now the head and waits only for the first start to age out.
            await wait_until(lambda: gt.sleeping == 1 and len(gt.sleeps) == 2)
            assert gt.sleeps[-1] == pytest.approx(ONE)
            gt.advance(ONE)
    assert events == ["head left", f"second started at {1000.0 + ONE:.3f}"]
    assert throttle.waiting == 0


async def test_cancelled_queued_caller_does_not_block_those_behind_it() -> None:
    ft = FakeTime()
    throttle = Throttle(1.0, 1, clock=ft.clock, sleep=ft.sleep)
    order: list[str] = []

    async def caller(name: str, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            await throttle.acquire()
            order.append(name)

    with anyio.fail_after(5):
        await throttle.acquire()
        middle = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller, "a")
            tg.start_soon(caller, "b", middle)
            tg.start_soon(caller, "c")
            await wait_until(lambda: throttle.waiting == 3)
            middle.cancel()
    assert order == ["a", "c"]
    # "b" never took a slot: "c" started one window after "a".
    assert ft.now == pytest.approx(1000.0 + 2 * ONE)


async def test_update_wakes_a_sleeping_head_and_speeds_up_the_queue() -> None:
    gt = GatedTime()
    throttle = Throttle(1.0, 1, clock=gt.clock, sleep=gt.sleep)
    waits: list[float] = []

    async def caller() -> None:
        waits.append((await throttle.acquire()).waited)

    with anyio.fail_after(5):
        await throttle.acquire()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(caller)
            await wait_until(lambda: gt.sleeping == 1 and throttle.waiting == 3)
            await throttle.change(lambda p: PlanState.known(20.0, 20))
    # Nobody waited for the old 1 s window: the clock never moved.
    assert waits == [0.0, 0.0, 0.0]
    assert gt.now == 1000.0
    assert throttle.in_force() == (20.0, 20)


async def test_update_to_a_slower_rate_makes_the_next_caller_wait_longer() -> None:
    ft = FakeTime()
    throttle = Throttle(10.0, 10, clock=ft.clock, sleep=ft.sleep)
    with anyio.fail_after(5):
        await throttle.acquire()
        await throttle.change(lambda p: PlanState.known(0.5, 1))  # one start per 2 s
        waited = (await throttle.acquire()).waited
    assert waited == pytest.approx(2.0 * MARGIN + SLACK)


async def test_block_until_holds_every_start_until_the_given_time() -> None:
    ft = FakeTime()
    throttle = Throttle(50.0, 50, clock=ft.clock, sleep=ft.sleep)
    await throttle.change(lambda p: p.blocked(1003.0))
    await throttle.change(lambda p: p.blocked(1001.0))  # an earlier time never shortens the block
    with anyio.fail_after(5):
        first = (await throttle.acquire()).waited
        second = (await throttle.acquire()).waited
    assert first == pytest.approx(3.0)
    assert second == 0.0
    assert ft.now == pytest.approx(1003.0)


async def test_acquire_without_contention_does_not_sleep() -> None:
    ft = FakeTime()
    throttle = Throttle(1.0, 1, clock=ft.clock, sleep=ft.sleep)
    assert (await throttle.acquire()).waited == 0.0
    ft.now += 5.0
    assert (await throttle.acquire()).waited == 0.0
    assert ft.sleeps == []


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (-1.0, 1), (float("nan"), 1), (float("inf"), 1), (1.0, 0)])
def test_invalid_limits_are_refused(rate: float, burst: int) -> None:
    ft = FakeTime()
    with pytest.raises(ValueError):
        Throttle(rate, burst, clock=ft.clock, sleep=ft.sleep)


async def test_the_estimate_refuses_nothing_until_the_plan_is_known() -> None:
    """Issue 22: the queue was estimated at a guessed start rate; with no plan learned there is no estimate."""
    ft = FakeTime()
    limiter = memory_limiter("brave", rate=None, family="search", clock=ft.clock, sleep=ft.sleep)
    assert limiter.estimate() is None
    await limiter.acquire()  # the probe
    assert limiter.estimate() is None
    await limiter.change(lambda p: p.learned_as(2.0, 2))  # learned: the whole plan at once (issue 44)
    assert limiter.estimate() == 1000.0  # the probe and one more fit the window of two


async def test_the_estimate_counts_the_callers_ahead_at_the_plan_in_force() -> None:
    gt = GatedTime()
    limiter = Throttle(1.0, 1, clock=gt.clock, sleep=gt.sleep)
    with anyio.fail_after(5):
        await limiter.acquire()
        assert limiter.estimate() == pytest.approx(1000.0 + ONE)
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(limiter.acquire)
            await wait_until(lambda: gt.sleeping == 1 and limiter.waiting == 3)
            assert limiter.estimate() == pytest.approx(1000.0 + 4 * ONE)  # three ahead, then this one
            await limiter.change(lambda p: PlanState.known(1000.0, 1000))
    assert limiter.estimate() == 1000.0


async def test_a_waiter_behind_another_process_probe_looks_again_often() -> None:
    """While the plan is unknown a second caller waits for the probe's answer, polling, never refused early."""
    ft = FakeTime()
    limiter = memory_limiter("brave", rate=None, family="search", clock=ft.clock, sleep=ft.sleep)
    await limiter.acquire()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(limiter.acquire)
            await wait_until(lambda: len(ft.sleeps) >= 3)
            assert set(ft.sleeps) == {0.05}
            await limiter.change(lambda p: p.probe_released())  # the probe failed: the next request probes
    assert limiter.waiting == 0


async def test_the_estimate_sees_only_the_window_however_many_starts_the_last_minute_holds() -> None:
    """Issue 22 item 3: the estimate looked at every start of the last minute (up to 4,096) on every call."""
    ft = FakeTime()
    limiter = Throttle(5.0, 5, clock=ft.clock, sleep=ft.sleep)  # a window of 1 s (plus the margin)
    for _ in range(5000):  # one start every 0.2 s, or as the window allows, for over 1,000 s
        await limiter.acquire()
        await ft.sleep(0.2)
    kept = limiter._recent
    every = ONE / 5  # the window (with its margin) is what paces them
    assert abs(len(kept) - 60 / every) <= 2 and ft.clock() - kept[0] <= 60.2  # a minute of starts, no more
    # the five newest fill the window: the next start is when the oldest of them leaves it
    estimate = limiter.estimate()
    assert estimate is not None and ft.clock() < estimate == pytest.approx(kept[-5] + ONE)
    await ft.sleep(2.0)
    assert limiter.estimate() == pytest.approx(ft.clock())


async def test_a_caller_who_finds_the_queue_empty_takes_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 3: most calls arrive alone; only a caller with someone ahead needs an event to be woken by."""
    ft = FakeTime()
    throttle = Throttle(20.0, 1, clock=ft.clock, sleep=ft.sleep)
    made = 0
    real = anyio.Event

    def counted() -> anyio.Event:
        nonlocal made
        made += 1
        return real()

    monkeypatch.setattr(anyio, "Event", counted)
    for _ in range(3):
        await throttle.acquire()
    assert made == 0
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(throttle.acquire)
    assert made == 2  # the second and third waited for their turn
    assert throttle.waiting == 0


async def test_a_plan_stated_while_a_process_watched_is_its_own_and_one_stored_before_is_checked_alone() -> None:
    """Issue 44: on a key never seen, a process whose calls waited for another process's probe runs the plan that
    probe's answer stated at full speed at once; a process that finds a plan stored before it looked sends its
    first request alone until an answer is heard (``Limiter.heard``), then runs at full speed."""
    ft = FakeTime()
    prober = memory_limiter("brave", rate=None, family="search", clock=ft.clock, sleep=ft.sleep)
    watcher = Limiter(prober.slots, prober.ask, clock=ft.clock, sleep=ft.sleep)
    await prober.acquire(answers=True)  # the probe
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.acquire)  # waits on the probe, seeing no plan stored
            await wait_until(lambda: bool(ft.sleeps))
            await prober.change(lambda p: p.learned_as(20.0, 20))
    assert watcher.stated and watcher.out_cap() == float("inf")  # stated while it watched: no request alone
    newcomer = Limiter(prober.slots, prober.ask, clock=ft.clock, sleep=ft.sleep)
    await newcomer.acquire(answers=True)
    assert (newcomer.stated, newcomer.out_cap()) == (False, 1)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: newcomer.acquire(answers=True))  # held: the first is out unanswered
            await wait_until(lambda: newcomer.waiting == 1 and ft.sleeps[-1] > 0)
            await anyio.lowlevel.checkpoint()
            assert newcomer.waiting == 1
            newcomer.heard()  # its answer came: the stored plan is this process's now
    assert (newcomer.stated, newcomer.out_cap(), newcomer.waiting) == (True, float("inf"), 0)


async def test_a_process_that_looked_before_any_plan_was_stored_runs_one_learned_later_at_full_speed() -> None:
    """Issue 44: a replica that started on a key never seen (``look`` found no plan) and whose first calls waited
    on another replica's fetch, not on the probe, runs the plan that probe stated at full speed from its first
    request; a process that first looks once a plan is stored still checks it with one request alone."""
    ft = FakeTime()
    prober = memory_limiter("brave", rate=None, family="search", clock=ft.clock, sleep=ft.sleep)
    early = Limiter(prober.slots, prober.ask, clock=ft.clock, sleep=ft.sleep)
    assert not (await early.look()).learned  # at its start: nothing stored yet
    await prober.acquire(answers=True)  # the probe, sent by another process
    await prober.change(lambda p: p.learned_as(20.0, 20))
    late = Limiter(prober.slots, prober.ask, clock=ft.clock, sleep=ft.sleep)
    assert (await late.look()).learned
    await early.acquire(answers=True)  # its first request, out unanswered: the next need not wait for its answer
    assert (early.stated, early.out_cap()) == (True, float("inf"))
    assert (late.stated, late.out_cap()) == (False, 1)
