"""Calls that cannot succeed in time fail at once; a lying plan is learned around; a used-up month closes the gate."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.limits import brave_limits
from brave_search_mcp.brave.shared_state import upstream_id
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.admission import Admission
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.ratelimit.plan import horizon
from brave_search_mcp.state.memory import MemoryBackend, memory_limiter
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.brave.mock import mock_transport
from testkit.brave.reply import Reply
from testkit.clock import FakeClock, ParallelClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio


def shared_client(fake: FakeBrave, clock: FakeClock, state: MemoryBackend, *, latency: float) -> BraveClient:
    """An adaptive client in a process of its own (its own queues) whose numbers live in ``state``'s, as processes
    share them in the state file or Redis."""
    settings = make_settings(rate_limit=None, burst=None)
    process = MemoryBackend(clock=clock, sleep=clock.sleep, cache_max_entries=0)
    process.slots = state.slots
    state = process
    limits = brave_limits(state, settings, upstream=upstream_id(settings.base_url, "k"), clock=clock)
    transport = fake.mock_transport(latency=latency, sleep=clock.sleep)
    return BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep, limits=limits)


def adaptive_client(fake: FakeBrave, clock: FakeClock, *, latency: float = 0.0, **overrides: Any) -> BraveClient:
    """A client that learns the plan from Brave's headers, as a fresh server with no shared state does (``latency``:
    each answer comes back that long after its request, on a ``ParallelClock``)."""
    settings = make_settings(**{"rate_limit": None, "burst": None, **overrides})
    transport = fake.mock_transport(latency=latency, sleep=clock.sleep)
    return BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep)


async def test_a_call_that_cannot_start_before_its_deadline_fails_at_once() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1, clock=clock)
    outcomes: list[tuple[str, float]] = []
    waits_ms: list[int] = []
    said: list[tuple[int, bool]] = []
    async with adaptive_client(fake, clock) as client:
        await client.get(Endpoint.WEB, [("q", "learns the 1/s plan")])
        await clock.sleep(2.0)

        async def one(n: int) -> None:
            started = clock()
            try:
                await client.get(Endpoint.WEB, [("q", f"queued {n}")], deadline=started + 3.0)
                outcomes.append(("ok", clock() - started))
            except errors.RateLimited as exc:
                outcomes.append(("RATE_LIMITED", clock() - started))
                waits_ms.append(exc.details["retry_after_ms"] if exc.retryable else -1)
                said.append((exc.details["attempts"], "nothing was sent" in exc.message))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for n in range(10):
                    tg.start_soon(one, n)
    succeeded = [t for code, t in outcomes if code == "ok"]
    refused = [t for code, t in outcomes if code == "RATE_LIMITED"]
    assert 2 <= len(succeeded) <= 4  # what a 1/s plan can start within 3 s
    assert len(refused) == 10 - len(succeeded)
    assert all(t == 0.0 for t in refused)  # refused at once: no virtual time spent waiting
    assert all(ms >= 1000 for ms in waits_ms)  # retryable, with how long to wait
    assert set(said) == {(0, True)}  # no attempt, and the message says so
    assert fake.rate_limited_count == 0 and fake.hits("/web/search") == len(succeeded) + 1


async def test_a_plan_header_that_overstates_the_rate_costs_only_a_few_429s() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=5, clock=clock)
    fake.advertised_rate_per_second = 20  # the header says 20/s; the upstream refuses past 5/s
    async with adaptive_client(fake, clock, retries=3) as client:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for n in range(50):
                    tg.start_soon(client.get, Endpoint.WEB, [("q", f"lying plan {n}")])
        snapshot = await client.admission()
    assert fake.hits("/web/search") - fake.rate_limited_count == 50  # every call got its answer
    assert fake.rate_limited_count <= 5
    assert snapshot["plan_per_second"] == 20.0
    assert snapshot["rate_in_force_per_second"] <= 5.0  # the status tool shows the rate really in force


async def test_a_used_up_month_fails_fresh_queries_fast_but_serves_cached_ones() -> None:
    clock = FakeClock()
    fake = FakeBrave(clock=clock)
    settings = make_settings()
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        cached = await tools.call("brave_web_search", {"query": "asked before"})
        assert not cached.is_error
        fake.inject("429_quota", month_reset=7200)
        first = await tools.call("brave_web_search", {"query": "fresh one"})
        hits = fake.hits()
        second = await tools.call("brave_web_search", {"query": "another fresh one"})
        again = await tools.call("brave_web_search", {"query": "asked before"})
        status = await tools.call("brave_web_search_status", {})
    for outcome in (first, second):
        error = outcome.structured["error"]
        assert (error["code"], error["retryable"]) == ("QUOTA_EXCEEDED", False)
        assert error["details"]["retry_after_seconds"] == pytest.approx(7200, abs=1)
        assert error["details"]["resets_at"].endswith("Z")
    assert fake.hits() == hits  # the second fresh query sent nothing
    assert not again.is_error and again.structured["meta"]["cached"] is True
    report = status.structured
    assert report["status"] == "paused"  # never "ok" while the gate holds
    assert report["reasons"][0].startswith("Brave: the monthly quota is used up; it resets at")
    assert report["throttle"]["quota_exhausted"]["resets_in_seconds"] == pytest.approx(7200, abs=1)


@pytest.mark.parametrize("deadline", [3.0, 3.05, 3.1, 3.15, 3.2, 3.25, 3.3])
async def test_a_refused_call_is_not_retried_into_its_deadline(deadline: float) -> None:
    """Issue 22: a queue refusal whose wait ends just inside the deadline was retried by tenacity, so the call
    slept out the whole estimated wait (invisible to the queue) and then sent at its deadline; it must end at once."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    outcomes: list[tuple[str, float]] = []
    sent_for_refused: list[int] = []
    async with adaptive_client(fake, clock, rate_limit=1.0, burst=1) as client:  # a known 1/s: refusals happen

        async def one(n: int) -> None:
            started = clock()
            try:
                await client.get(Endpoint.WEB, [("q", f"refused {n}")], deadline=started + deadline)
                outcomes.append(("ok", clock() - started))
            except errors.RateLimited as exc:
                outcomes.append(("RATE_LIMITED", clock() - started))
                sent_for_refused.append(exc.details.get("attempts", 0))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for n in range(10):
                    tg.start_soon(one, n)
    refused = [t for code, t in outcomes if code == "RATE_LIMITED"]
    assert refused and all(t == 0.0 for t in refused)  # no virtual time spent sleeping before the refusal
    assert not any(sent_for_refused)  # no attempt was made for a refused call
    assert all(t <= deadline for code, t in outcomes if code == "ok")
    assert fake.hits("/web/search") == len(outcomes) - len(refused)  # no request sent at the deadline


async def _learn(client: BraveClient, calls: int) -> None:
    """``calls`` searches one after another: the probe teaches the plan, each clean answer counts towards it."""
    for n in range(calls):
        await client.get(Endpoint.WEB, [("q", f"learns {n}")])


async def _parallel(client: BraveClient, clock: FakeClock, n: int, tag: str) -> float:
    """``n`` searches at once; the virtual seconds until the last one answered (every one must succeed)."""
    start = clock()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(client.get, Endpoint.WEB, [("q", f"{tag} {i}")])
    return clock() - start


async def test_a_plan_that_shrinks_under_a_running_process_is_adopted_at_once_and_run_at_not_halved() -> None:
    """Issue 36: the key's plan says 50/s, its answers now say 1/s: 10 calls at once cost 3 × 429 and then ran at
    0.5/s (18.7 s). The smaller plan stated by the first answer is in force at once and the 429s of requests
    already out are one overload, forgiven: the ten run at 1/s (about 9-10 s). This process heard the 50/s plan
    stated, so all ten go together and nine come back, once."""
    clock = ParallelClock()  # ten calls waiting at once wait together
    fake = FakeBrave(rate_per_second=50, clock=clock)
    async with clock.running(), adaptive_client(fake, clock, latency=0.1) as client:
        await _learn(client, 2)
        assert (await client.admission())["plan_per_second"] == 50.0
        await clock.sleep(2.0)
        fake.rate_per_second = 1  # a downgrade: the fake now allows and states 1/s
        fake.reset()
        took = await _parallel(client, clock, 10, "shrunk")
        snapshot = await client.admission()
    assert fake.hits("/web/search", status=200) == 10  # every call answered
    assert fake.rate_limited_count == 9
    assert (snapshot["plan_per_second"], snapshot["rate_in_force_per_second"]) == (1.0, 1.0)  # not 0.5
    assert 9 * horizon(1, 1) <= took <= 10 * horizon(1, 1) + 0.5


async def test_a_stored_plan_that_shrank_is_checked_by_one_request_alone_then_run_at_full_speed() -> None:
    """Issue 44: a process finds a 50/s plan stored by an earlier one; the key now has 1/s. Ten calls at once:
    the first goes alone, its answer states 1/s, the other nine follow at 1/s: no 429 (at most one is the goal).
    On a plan that still holds, the same check costs one answer's latency, then the rest go at once."""
    clock = ParallelClock()
    fake = FakeBrave(rate_per_second=50, clock=clock)
    state = MemoryBackend(clock=clock, sleep=clock.sleep, cache_max_entries=0)
    async with clock.running():
        async with shared_client(fake, clock, state, latency=0.1) as earlier:
            await _learn(earlier, 1)
        await clock.sleep(60.0)
        async with shared_client(fake, clock, state, latency=0.1) as same:
            held = await _parallel(same, clock, 10, "holds")
        assert fake.rate_limited_count == 0 and held == pytest.approx(0.2)  # one alone, then nine together
        await clock.sleep(60.0)
        fake.rate_per_second = 1  # a downgrade while no process ran
        fake.reset()
        async with shared_client(fake, clock, state, latency=0.1) as client:
            assert (await client.admission())["plan_per_second"] == 50.0  # what the state holds
            took = await _parallel(client, clock, 10, "shrunk")
            snapshot = await client.admission()
    assert fake.hits("/web/search", status=200) == 10 and fake.rate_limited_count == 0
    assert (snapshot["plan_per_second"], snapshot["rate_in_force_per_second"]) == (1.0, 1.0)
    assert took <= 10 * horizon(1, 1) + 0.5


async def test_a_429_restating_the_plan_costs_a_short_pause_not_half_the_burst() -> None:
    """Issue 36: 200 calls at a 20/s plan; one upstream 429 (jitter: its headers restate the plan) used to halve the
    rate for the rest of the burst (19.6 s instead of 10.4 s). Now it costs one slot's pause; a 429 soon after
    another is a plan that does not hold, and halves (tests/test_rate_rules.py)."""
    clock = ParallelClock()
    fake = FakeBrave(rate_per_second=20, clock=clock)
    async with clock.running(), adaptive_client(fake, clock, latency=0.1) as client:
        await _learn(client, 21)  # the probe and twenty clean answers: whole windows from now on
        await clock.sleep(2.0)
        fake.inject("429")  # Brave's RATE_LIMITED with its headers: 20/s, nothing left this second
        took = await _parallel(client, clock, 200, "burst")
        snapshot = await client.admission()
    assert fake.rate_limited_count == 1 and fake.hits("/web/search", status=200) == 21 + 200
    assert snapshot["rate_in_force_per_second"] == 20.0
    windows = 200 / 20
    assert took <= windows * horizon(20, 20) + 0.5  # at the plan, with its margin: 10.85 s, not 19


def timed_client(fake: FakeBrave, clock: FakeClock, sent: list[float], *, latency: float) -> BraveClient:
    """``adaptive_client`` whose every request's arrival at the fake is noted in ``sent`` (on ``clock``)."""

    def handle(method: str, path: str, params: list[tuple[str, str]], headers: dict[str, str], body: bytes) -> Reply:
        sent.append(clock())
        return fake.handle(method, path, params, headers, body)

    settings = make_settings(rate_limit=None, burst=None)
    transport = mock_transport(handle, latency=latency, sleep=clock.sleep)
    return BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep)


async def test_a_spent_window_our_own_starts_fill_frees_when_the_oldest_ages_out() -> None:
    """Issue 44's fleet: the answer to the start that fills a 5/s window says 0 left this second. Every start was
    ours and counted in the store, so the window rule holds the next one until the window's oldest start ages out;
    it used to pause every start until the filling request's send time + 1.085 s as well (0.3 s later here)."""
    clock = ParallelClock()
    fake = FakeBrave(rate_per_second=5, clock=clock)
    sent: list[float] = []
    async with clock.running(), timed_client(fake, clock, sent, latency=0.1) as client:
        await _learn(client, 1)  # the probe at 1000.0: the window's oldest start
        await clock.sleep(0.2)
        await _parallel(client, clock, 5, "fills")  # four more at 1000.3 fill the window; the fifth waits
    assert fake.hits("/web/search", status=200) == 6 and fake.rate_limited_count == 0
    assert sent[:5] == pytest.approx([1000.0] + [1000.3] * 4)
    assert sent[5] == pytest.approx(1000.0 + horizon(5, 5))  # not 1000.3 + horizon(5, 5)


async def test_a_spent_window_another_program_filled_still_pauses_every_start() -> None:
    """The other side: another program used the key (three requests the store never saw), so the answer to our
    second start says 0 left while our window has room for three more. Every start waits out the reset, counted
    from that request's send time, as before: no 429."""
    clock = ParallelClock()
    fake = FakeBrave(rate_per_second=5, clock=clock)
    sent: list[float] = []
    async with clock.running(), timed_client(fake, clock, sent, latency=0.1) as client:
        await _learn(client, 1)
        await clock.sleep(2.0)
        for n in range(3):  # the other program, on the same key
            fake.handle("GET", "/res/v1/web/search", [("q", f"theirs {n}")], {"X-Subscription-Token": VALID_KEY})
        await _parallel(client, clock, 2, "ours")  # the two fill Brave's window: the second's answer says so
        await client.get(Endpoint.WEB, [("q", "after")])  # so this one waits for the reset of that request's
    assert fake.hits("/web/search", status=200) == 1 + 3 + 3 and fake.rate_limited_count == 0
    start = 1000.1 + 2.0
    assert sent[1:] == pytest.approx([start, start, start + horizon(1, 1)])  # not at once (start + 0.1): a 429


async def test_a_request_that_left_late_is_counted_from_when_it_left_and_its_spent_window_is_ours() -> None:
    """Brave counts a request when it arrives. One that left 60 ms after its booking (a starved event loop) is
    counted from then (``left``): the next start waits a window from when it left, not from its booking (which
    would meet it within Brave's second: a 429), and its spent window pauses nothing more (the window is ours)."""
    ft = FakeClock()
    limiter = memory_limiter("brave", rate=1.0, burst=1, clock=ft.clock, sleep=ft.sleep)
    admission = Admission(limiter, clock=ft.clock, adaptive=False)
    ticket = await admission.admit(None)
    assert ticket.grant is not None and ticket.grant.full  # a burst of 1: every start fills the window
    await ft.sleep(0.06)
    sent = ft.clock()
    await admission.left(ticket, sent)
    info = RateLimitInfo(per_second=1.0, remaining_second=0, reset_seconds=1.0, observed_at=sent)
    await admission.observe(info, ticket=ticket)
    assert limiter.plan.blocked_until == -math.inf
    await admission.admit(None)
    assert ft.clock() == pytest.approx(sent + horizon(1, 1))


async def test_a_spent_window_filled_by_a_start_booked_after_the_request_is_ours() -> None:
    """A request booked after this one may leave and arrive first, and Brave counted it: this start did not fill
    the window as it was booked, but the starts recorded up to when it left do, so its spent window pauses nothing."""
    ft = FakeClock()
    limiter = memory_limiter("brave", rate=2.0, burst=2, clock=ft.clock, sleep=ft.sleep)
    admission = Admission(limiter, clock=ft.clock, adaptive=False)
    first = await admission.admit(None)
    assert first.grant is not None and not first.grant.full
    await ft.sleep(0.004)
    await admission.admit(None)  # booked 4 ms later
    await ft.sleep(0.002)  # the first left 6 ms after its booking (under ``LATE_SECONDS``: not moved)
    info = RateLimitInfo(per_second=2.0, remaining_second=0, reset_seconds=1.0, observed_at=ft.clock())
    await admission.observe(info, ticket=first)
    assert limiter.plan.blocked_until == -math.inf


async def test_a_spent_window_the_starts_do_not_explain_pauses_every_start_from_its_send_time() -> None:
    """Another program on the key: the window was not full by our starts, yet Brave says it is spent; every start
    waits for its reset (with the margin) from when that request was sent."""
    ft = FakeClock()
    limiter = memory_limiter("brave", rate=2.0, burst=2, clock=ft.clock, sleep=ft.sleep)
    admission = Admission(limiter, clock=ft.clock, adaptive=False)
    ticket = await admission.admit(None)
    assert ticket.grant is not None and not ticket.grant.full
    info = RateLimitInfo(per_second=2.0, remaining_second=0, reset_seconds=1.0, observed_at=ft.clock())
    await admission.observe(info, ticket=ticket)
    assert limiter.plan.blocked_until == pytest.approx(ft.clock() + horizon(1, 1))
