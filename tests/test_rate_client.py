"""The client runs at the plan Brave reports: a fresh key probes once, a learned plan is used from the first burst,
an explicit setting wins; on a fake clock, with the scripted upstream of test_client."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.limits import brave_limits
from brave_search_mcp.brave.shared_state import upstream_id
from brave_search_mcp.ratelimit.plan import horizon
from brave_search_mcp.state.memory import MemoryBackend
from testkit.clock import FakeClock as FakeTime
from tests.brave_client_support import BASE, KEY, Upstream, call, call_query, make_client, ok, settings, web_body

pytestmark = pytest.mark.anyio

PLAN_20 = {"X-RateLimit-Policy": "20;w=1, 0;w=2592000", "X-RateLimit-Limit": "20, 0"}


class Recorder:
    """Answers with the plan's headers after one scheduling turn, recording when each request began and ended.
    The first request is held until ``release`` is set, so a test can see whether others start meanwhile."""

    def __init__(self, clock: FakeTime, headers: dict[str, str]) -> None:
        self.clock = clock
        self.headers = headers
        self.events: list[tuple[str, float]] = []
        self.release = anyio.Event()

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        first = not self.events
        self.events.append(("start", self.clock()))
        if first:
            await self.release.wait()
        await anyio.lowlevel.checkpoint()  # others may start meanwhile, if the limiter lets them
        self.events.append(("end", self.clock()))
        return ok(web_body(), headers=self.headers)

    def starts(self) -> list[float]:
        return [t for kind, t in self.events if kind == "start"]


async def burst(client: BraveClient, n: int, tag: str, recorder: Recorder, *, while_first_out: int) -> None:
    """``n`` calls at once; the first request is answered once ``while_first_out`` requests have started, or
    once 1 s has passed on the fake clock (a probe holds the others back that long: they only poll)."""
    start = recorder.clock()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(call_query, client, f"{tag} {i}")
            while len(recorder.starts()) < while_first_out and recorder.clock() - start < 1.0:
                await anyio.lowlevel.checkpoint()
            recorder.release.set()


def peak(events: list[tuple[str, float]]) -> int:
    """The most requests out at once in ``events``."""
    out = most = 0
    for kind, _ in events:
        out += 1 if kind == "start" else -1
        most = max(most, out)
    return most


def in_force(client: BraveClient) -> tuple[float | None, int | None]:
    """The search family's (rate, burst) in force, read afresh (not narrowed by an earlier assertion)."""
    return client.throttle_rate


def client_on(state: MemoryBackend, up: Upstream, ft: FakeTime, **overrides: Any) -> BraveClient:
    """A client in a process of its own (its own queues) whose numbers live in ``state``'s, as processes share them
    in the state file."""
    up.clock = ft.clock
    values = settings(**overrides)
    process = MemoryBackend(clock=ft.clock, sleep=ft.sleep, cache_max_entries=0)
    process.slots = state.slots
    state = process
    limits = brave_limits(state, values, upstream=upstream_id(BASE, KEY), clock=ft.clock)
    transport = httpx2.MockTransport(up.handle)
    return BraveClient(values, transport=transport, clock=ft.clock, sleep=ft.sleep, limits=limits)


async def test_a_fresh_key_probes_alone_then_a_second_process_starts_at_the_learned_plan() -> None:
    """Issue 22: the first 10 parallel calls of a fresh key on a 20/s plan: one alone, then nine at once (issue 44:
    the plan the probe's answer states is in force in full, no ramp). A later process over the same state checks
    the stored plan with one request alone, then runs whole bursts."""
    ft = FakeTime()
    state = MemoryBackend(clock=ft.clock, sleep=ft.sleep, cache_max_entries=0)
    fresh = Recorder(ft, PLAN_20)
    async with client_on(state, Upstream(fresh), ft) as client:
        assert in_force(client) == (None, None)
        await burst(client, 10, "fresh", fresh, while_first_out=2)
        assert in_force(client) == (20.0, 20)
    assert [kind for kind, _ in fresh.events[:3]] == ["start", "end", "start"]  # the probe went alone...
    starts = fresh.starts()
    assert starts[1] - starts[0] >= 1.0  # ...however long its answer took (held 1 s here)
    assert len(set(starts[1:])) == 1 and peak(fresh.events[2:]) > 1  # then the nine at once, not one at a time
    second = Recorder(ft, PLAN_20)
    await ft.sleep(2)
    async with client_on(state, Upstream(second), ft) as client:
        await burst(client, 20, "second", second, while_first_out=2)
        assert in_force(client) == (20.0, 20)
    assert [kind for kind, _ in second.events[:3]] == ["start", "end", "start"]  # one alone: still the plan?
    assert len(set(second.starts()[1:])) == 1 and peak(second.events[2:]) > 1  # yes: the other nineteen at once


async def test_explicit_rate_limit_is_never_adapted() -> None:
    up, ft = Upstream(ok(headers=PLAN_20)), FakeTime()
    async with make_client(up, ft, rate_limit=2.0, burst=2) as client:
        assert in_force(client) == (2.0, 2)  # known before any request: no probe either
        await call(client)
        assert in_force(client) == (2.0, 2)


async def test_explicit_burst_caps_the_learned_burst_and_never_exceeds_the_plan() -> None:
    up, ft = Upstream(ok(headers=PLAN_20)), FakeTime()
    async with make_client(up, ft, burst=5) as client:
        for n in range(6):  # the probe, then five clean answers confirm the plan (burst capped at 5)
            await call(client, params=[("q", f"q{n}")])
        assert in_force(client) == (20.0, 5)
    up2, ft2 = Upstream(ok(headers={"X-RateLimit-Policy": "2;w=1"})), FakeTime()
    async with make_client(up2, ft2, burst=10) as client:
        for n in range(4):
            await call(client, params=[("q", f"q{n}")])
        assert in_force(client) == (2.0, 2)


async def test_exhausted_second_window_holds_the_next_request_until_reset() -> None:
    headers = {
        "X-RateLimit-Policy": "50;w=1, 0;w=2592000",
        "X-RateLimit-Remaining": "0, 0",
        "X-RateLimit-Reset": "1, 99",
    }
    up, ft = Upstream(ok(headers=headers)), FakeTime()
    async with make_client(up, ft) as client:
        await call(client, params=[("q", "a")])
        await call(client, params=[("q", "b")])
    assert up.times[1] - up.times[0] == pytest.approx(horizon(1, 1))  # the reset, with the window's margin


async def test_a_learned_one_per_second_plan_spaces_requests_one_window_apart_unless_disabled() -> None:
    up, ft = Upstream(ok(headers={"X-RateLimit-Policy": "1;w=1, 0;w=2592000"})), FakeTime()
    async with make_client(up, ft) as client:
        for query in ("a", "b", "c"):
            await call(client, params=[("q", query)])
        await call(client, params=[("q", "d")], throttle=False)
    one = horizon(1, 1)
    assert [t - 1000.0 for t in up.times] == pytest.approx([0.0, one, 2 * one, 2 * one])


async def test_answers_without_headers_teach_nothing_and_free_the_probe() -> None:
    """An answer without rate headers (a proxy, a 5xx page) leaves the plan unknown: the next request probes."""
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        for query in ("a", "b"):
            await call(client, params=[("q", query)])
        assert in_force(client) == (None, None)
    assert up.times == [1000.0, 1000.0]


async def test_replicas_opened_on_a_key_never_seen_run_the_plan_one_of_them_learns_at_full_speed(tmp_path: Any) -> None:
    """Issue 44: replicas that start on a key never seen look at the stored plan as they open (``open_client``);
    when one of them learns the plan, another whose calls never waited on that probe (they were answered from a
    shared fetch) sends its next burst at once, not one request alone first."""
    from brave_search_mcp.compose import open_client

    ft = FakeTime()
    values = settings(state=f"sqlite:///{tmp_path / 'state.db'}")
    first_up, second_up = Recorder(ft, PLAN_20), Recorder(ft, PLAN_20)
    first_up.release.set()  # the probe's answer comes at once
    async with (
        open_client(values, transport=httpx2.MockTransport(Upstream(first_up).handle)) as first,
        open_client(values, transport=httpx2.MockTransport(Upstream(second_up).handle)) as second,
    ):
        await call_query(first, "the probe")
        assert in_force(first) == (20.0, 20)
        await burst(second, 5, "second", second_up, while_first_out=5)
    assert len(second_up.starts()) == 5 and peak(second_up.events) == 5  # all five out at once: no request alone
