"""Faults through the MCP client, cancellation at every wait (queue, backoff, request in flight), bounded probes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.brave.brave import WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary
from tests.fault_cases import (
    CALL_DEADLINE,
    MARGIN,
    OVERSIZE,
    check_envelope,
    harness,
    new_fake,
)

pytestmark = pytest.mark.anyio


# -- the MCP face ---------------------------------------------------------------------------------


def _error_of(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert result.structured_content is not None
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "Traceback" not in block.text
    error: dict[str, Any] = result.structured_content["error"]
    assert block.text.startswith(error["code"])
    return error


@pytest.mark.parametrize(
    ("face", "fault", "options", "code", "retryable"),
    [
        ("mock", "503", {}, "UPSTREAM_ERROR", True),
        ("mock", "429_quota", {}, "QUOTA_EXCEEDED", False),
        ("server", "reset", {}, "NETWORK_ERROR", True),
        ("server", "hang", {"seconds": 2.0}, "TIMEOUT", True),
        ("server", "oversize", {"size": OVERSIZE, "gzip": False}, "RESPONSE_TOO_LARGE", False),
    ],
)
async def test_faults_through_the_mcp_client(
    face: str,
    fault: str,
    options: dict[str, Any],
    code: str,
    retryable: bool,
    counting_server: FakeBraveServer,
) -> None:
    fake = counting_server.fake
    base_url = counting_server.base_url if face == "server" else None
    async with harness(fake, base_url=base_url, retries=1) as h, Client(build_server(h.settings, h.client)) as mcp:
        fake.inject(fault, times=2, **options)
        with anyio.fail_after(CALL_DEADLINE + MARGIN):
            failed = await mcp.call_tool("brave_web_search", {"query": "through mcp", "search_type": "news"})
        error = _error_of(failed)
        assert (error["code"], error["retryable"]) == (code, retryable)
        assert fake.hits() == (2 if retryable else 1)
        fake.reset()
        if code == "QUOTA_EXCEEDED":  # the month is used up: fresh queries fail fast, cached ones still answer
            with anyio.fail_after(CALL_DEADLINE + MARGIN):
                refused = await mcp.call_tool("brave_web_search", {"query": "after mcp fault", "search_type": "news"})
            assert _error_of(refused)["code"] == "QUOTA_EXCEEDED" and fake.hits() == 0
            return
        with anyio.fail_after(CALL_DEADLINE + MARGIN):
            after = await mcp.call_tool("brave_web_search", {"query": "after mcp fault", "search_type": "news"})
        assert not after.is_error
        assert after.structured_content is not None
        assert after.structured_content["meta"]["returned"] > 0


# -- cancellation ---------------------------------------------------------------------------------


class BlockingSleep:
    """A sleep that records each wait and blocks until the test releases it (or the caller is cancelled)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self.releases: list[anyio.Event] = []
        self.instant = False

    async def __call__(self, seconds: float) -> None:
        if self.instant:
            await self.clock.sleep(seconds)
            return
        release = anyio.Event()
        self.waits.append(seconds)
        self.releases.append(release)
        await release.wait()
        self.clock.now += max(0.0, seconds)


@asynccontextmanager
async def blocking_service(
    transport: httpx2.AsyncBaseTransport, **overrides: Any
) -> AsyncIterator[tuple[ToolBoundary, BlockingSleep, FakeClock]]:
    clock = FakeClock()
    sleep = BlockingSleep(clock)
    settings = make_settings(**overrides)
    async with BraveClient(settings, transport=transport, clock=clock, sleep=sleep) as client:
        yield tool_boundary(settings, client, clock=clock, sleep=sleep), sleep, clock


async def wait_for_sleepers(sleep: BlockingSleep, count: int) -> None:
    """Let the other tasks run until ``count`` waits have started (bounded: they start without real time)."""
    with anyio.fail_after(1):
        while len(sleep.waits) < count:
            await anyio.lowlevel.checkpoint()


async def test_cancelling_a_call_queued_in_the_throttle_frees_it_and_does_not_delay_the_next() -> None:
    fake = new_fake()
    async with blocking_service(fake.mock_transport(), rate_limit=1.0, burst=1) as (service, sleep, clock):
        first = await service.call("brave_web_search", {"query": "takes the only slot"})
        assert not first.is_error
        outcomes: dict[str, ToolOutcome] = {}

        async def queued(name: str, scope: anyio.CancelScope) -> None:
            with scope:
                outcomes[name] = await service.call("brave_web_search", {"query": f"queued {name}"})

        cancelled, patient = anyio.CancelScope(), anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(queued, "cancelled", cancelled)
            await wait_for_sleepers(sleep, 1)  # the head of the queue waits out the window
            tg.start_soon(queued, "patient", patient)
            await anyio.wait_all_tasks_blocked()
            assert len(sleep.waits) == 1  # the second caller queues behind the first, not sleeping yet
            window = sleep.waits[0]
            assert 1.0 <= window <= 1.1
            with anyio.fail_after(1):
                cancelled.cancel()
                await wait_for_sleepers(sleep, 2)  # the next caller moved up at once
            assert cancelled.cancelled_caught
            assert "cancelled" not in outcomes
            # It waits only what is left of the same window: the cancelled caller cost it nothing.
            assert sleep.waits[1] == window
            sleep.releases[1].set()
        assert not outcomes["patient"].is_error
        assert fake.hits() == 2  # the cancelled caller never reached Brave
        assert clock.now - 1000.0 == pytest.approx(window)


class _RetryAfter(httpx2.AsyncBaseTransport):
    """The fake's answers, with a Retry-After header added to every 5xx (the fake's 5xx pages carry none)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, seconds: str) -> None:
        self.inner = inner
        self.seconds = seconds

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code >= 500:
            response.headers["Retry-After"] = self.seconds
        return response


@pytest.mark.parametrize(("fault", "options"), [("503", {}), ("429", {"retry_after": 30})])
async def test_cancelling_a_call_waiting_in_backoff_frees_it_at_once(fault: str, options: dict[str, Any]) -> None:
    fake = new_fake()
    fake.inject(fault, times=4, **options)
    async with blocking_service(_RetryAfter(fake.mock_transport(), "30")) as (service, sleep, _):
        with anyio.fail_after(1), anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(service.call, "brave_web_search", {"query": "backing off"})
                await wait_for_sleepers(sleep, 1)
                assert sleep.waits == [30.0]  # the Retry-After Brave sent
                scope.cancel()
        assert scope.cancelled_caught
        assert fake.hits() == 1  # no retry was sent after the cancel
        # The server goes on: with the fault cleared and waits instant, the next call succeeds.
        fake.reset()
        sleep.instant = True
        with anyio.fail_after(CALL_DEADLINE):
            after = await service.call("brave_web_search", {"query": "after the cancel"})
        assert not after.is_error


async def test_cancelling_a_call_while_its_request_is_in_flight_frees_it_at_once(
    counting_server: FakeBraveServer,
) -> None:
    fake = counting_server.fake
    fake.inject("hang", seconds=5.0)
    async with harness(fake, base_url=counting_server.base_url, timeout_seconds=30.0) as h:
        with anyio.fail_after(1), anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(h.service.call, "brave_web_search", {"query": "in flight"})
                # The request reached the fake (a thread): wait for it there, without sleeping on time.
                assert await anyio.to_thread.run_sync(counting_server.wait_for_requests, 1, 0.9)
                scope.cancel()
        assert scope.cancelled_caught
        after = await h.call("brave_web_search", {"query": "after the cancel"})
    check_envelope(after, None, False)
    assert fake.hits() == 2


# -- bounded status probes --------------------------------------------------------------------------


async def test_a_hanging_probe_degrades_status_instead_of_failing_it(counting_server: FakeBraveServer) -> None:
    fake = counting_server.fake
    fake.inject("hang", path=WEB_PATH, times=4, seconds=2.0)
    # The defaults scaled down 150x: timeout 15 s -> 0.1 s, retries 3, call deadline 60 s -> 0.4 s.
    async with harness(
        fake, base_url=counting_server.base_url, timeout_seconds=0.1, retries=3, call_deadline_seconds=0.4
    ) as h:
        outcome = await h.call("brave_web_search_status", {"probe_connectivity": True})
    check_envelope(outcome, None, False)
    report = outcome.structured
    assert report["status"] == "degraded"
    assert report["probe"][0]["code"] == "TIMEOUT"
