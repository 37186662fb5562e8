"""Fault injection: every fault the fake Brave can produce, through every tool, ends as the right envelope in time.

Each case injects one fault for exactly as many answers as the contract says the client will try, calls one
tool through the tool boundary (``SearchService.call``, the code behind every MCP tool) and checks the envelope
code, the retryable flag, the number of upstream attempts, the waits between them (on a fake clock) and that the
very next call of the same tool succeeds. HTTP faults run on the fake's MockTransport face; transport faults
(reset, slow body, hang, truncated gzip, oversize stream, refused) run on the real local HTTP server, because
only real sockets can fail that way. A few cases go through the in-memory MCP client too.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.brave.brave import IMAGES_PATH, NEWS_PATH, SUMMARIZER_PATH, VIDEOS_PATH, WEB_PATH, FakeBrave, Reply
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

SEARCH_PATHS: dict[str, str] = {"web": WEB_PATH, "news": NEWS_PATH, "images": IMAGES_PATH, "videos": VIDEOS_PATH}
SEARCH_TYPES = tuple(SEARCH_PATHS)
# call_deadline_seconds in every case here: room on the fake clock for every retry's wait (3 x 3 s) plus the
# throttle pause a 429 leaves behind, so the matrix checks the full retry policy.
CALL_DEADLINE = 30.0
MARGIN = 2.0  # what the test allows beyond the call deadline before it calls the call hung
ATTEMPT_TIMEOUT = 0.2  # per-attempt timeout: real time, so tiny
CAP = 64 * 1024  # max_response_bytes for the oversize faults
OVERSIZE = 32 * 1024 * 1024  # what the fake offers when it streams an oversize body
RETRY_MAX = 0.002  # make_settings' retry_max_ms, in seconds

Attempts = int | Literal["all"]  # "all" = retries + 1


@dataclass(frozen=True)
class Fault:
    """One injected fault and what the contract says the call must end as."""

    name: str
    code: str | None  # envelope error code; None = the call succeeds
    retryable: bool
    attempts: Attempts
    options: Mapping[str, Any] = field(default_factory=dict)
    wait: float | None = None  # the wait Brave asked for between attempts (Retry-After / X-RateLimit-Reset)
    label: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)  # per-fault settings overrides

    @property
    def id(self) -> str:
        """Readable test id."""
        return self.label or self.name

    def attempts_for(self, retries: int) -> int:
        """How many upstream requests the call must make."""
        return retries + 1 if self.attempts == "all" else self.attempts

    def times_for(self, retries: int) -> int:
        """How many answers the fault must take: every attempt of a failing call, else one."""
        return self.attempts_for(retries) if self.code is not None else 1


# The contract (DESIGN.md error table, docs/architecture.md "Resilience"), fault by fault.
HTTP_FAULTS: tuple[Fault, ...] = (
    Fault("500", "UPSTREAM_ERROR", True, "all"),
    Fault("502", "UPSTREAM_ERROR", True, "all"),
    Fault("503", "UPSTREAM_ERROR", True, "all"),
    Fault("504", "UPSTREAM_ERROR", True, "all"),
    Fault("429", "RATE_LIMITED", True, "all", {"retry_after": 2}, wait=2.0, label="429-retry-after"),
    Fault("429", "RATE_LIMITED", True, "all", {"reset_only": True, "reset": 3}, wait=3.0, label="429-reset-only"),
    Fault("429", None, False, 2, {"retry_after": 2}, wait=2.0, label="429-retry-after-once"),
    Fault("429", None, False, 2, {"reset_only": True, "reset": 3}, wait=3.0, label="429-reset-only-once"),
    Fault("429_quota", "QUOTA_EXCEEDED", False, 1),
    Fault("422_validation", "UPSTREAM_VALIDATION", False, 1),
    Fault("422_token", "AUTH_FAILED", False, 1),
    Fault("404_subscription", "AUTH_FAILED", False, 1),
    Fault("400_not_in_plan", "NOT_IN_PLAN", False, 1),
    Fault("403", "NOT_IN_PLAN", False, 1),
    Fault("403_bare", "UPSTREAM_ERROR", False, 1),
    Fault("invalid_json", "PARSE_ERROR", False, 1),
    Fault("empty_body", "PARSE_ERROR", False, 1),
    Fault("truncated_gzip", "PARSE_ERROR", False, 1),
    Fault("html_error", "UPSTREAM_ERROR", True, "all"),
    Fault("oversize", "RESPONSE_TOO_LARGE", False, 1),
    Fault("503", None, False, 2, label="503-once"),
    # The MockTransport face raises these at once (no real waiting); the server face does them for real below.
    Fault("refused", "NETWORK_ERROR", True, "all"),
    Fault("reset", "NETWORK_ERROR", True, "all"),
    Fault("timeout", "TIMEOUT", True, "all"),
    Fault("hang", "TIMEOUT", True, "all"),
)

SERVER_FAULTS: tuple[Fault, ...] = (
    Fault("refused", "NETWORK_ERROR", True, "all", label="closed-before-answer"),
    Fault("reset", "NETWORK_ERROR", True, "all"),
    Fault("reset", None, False, 2, label="reset-once"),
    Fault("timeout", "TIMEOUT", True, "all", {"seconds": 2.0}),
    Fault("hang", "TIMEOUT", True, "all", {"seconds": 2.0}),
    Fault(
        "slow_body",
        None,
        False,
        1,
        {"delay": 0.02, "chunk_size": 512},
        label="slow-body-within-timeout",
        settings={"timeout_seconds": 2.0},
    ),
    Fault("slow_body", "TIMEOUT", True, "all", {"delay": 0.1, "chunk_size": 64}, label="slow-body-past-timeout"),
    Fault("truncated_gzip", "PARSE_ERROR", False, 1),
    Fault("oversize", "RESPONSE_TOO_LARGE", False, 1, {"size": OVERSIZE, "gzip": False}, label="oversize-plain"),
    Fault("oversize", "RESPONSE_TOO_LARGE", False, 1, {"size": OVERSIZE, "gzip": True}, label="oversize-gzip-bomb"),
    Fault("empty_body", "PARSE_ERROR", False, 1),
    Fault("invalid_json", "PARSE_ERROR", False, 1),
    Fault("html_error", "UPSTREAM_ERROR", True, "all"),
    Fault("503", "UPSTREAM_ERROR", True, "all"),
    Fault("429", "RATE_LIMITED", True, "all", {"retry_after": 2}, wait=2.0, label="429-retry-after"),
    Fault("422_token", "AUTH_FAILED", False, 1),
    Fault("403_bare", "UPSTREAM_ERROR", False, 1),
)


def _targets(index: int) -> list[str]:
    """The tools a fault is tried on; the search type (and the faulted status probe) rotate with the fault."""
    rotated = SEARCH_TYPES[index % len(SEARCH_TYPES)]
    return [f"web:{rotated}", "summarizer:query", "summarizer:key", f"status:{rotated}", "help"]


def _matrix(faults: tuple[Fault, ...], *, every_search_type: bool) -> list[Any]:
    cases: list[Any] = []
    for index, fault in enumerate(faults):
        targets = _targets(index)
        if every_search_type:
            targets = [f"web:{kind}" for kind in SEARCH_TYPES] + targets[1:]
        cases.extend(pytest.param(fault, target, id=f"{fault.id}-{target}") for target in targets)
    return cases


class CountingFake(FakeBrave):
    """The fake, also counting the streamed body bytes it produced: what the socket was actually handed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.streamed_bytes = 0
        self.stream_closed = threading.Event()

    def handle(
        self, method: str, path: str, params: list[tuple[str, str]], headers: Mapping[str, str], body: bytes = b""
    ) -> Reply:
        """Answer as the fake does, wrapping a streamed body in a byte counter."""
        reply = super().handle(method, path, params, headers, body)
        chunks = reply.chunks
        if chunks is not None:

            def counted() -> Iterator[bytes]:
                try:
                    for chunk in chunks():
                        self.streamed_bytes += len(chunk)
                        yield chunk
                finally:
                    self.stream_closed.set()

            reply.chunks = counted
        return reply


def new_fake() -> CountingFake:
    # No summarizer "pending" polls: the only waits a call makes are then the retry waits under test.
    return CountingFake(rate_per_second=1000, monthly_limit=0, summarizer_pending_polls=0)


@dataclass
class Harness:
    """One client and service wired to the fake, on a fake clock."""

    fake: FakeBrave
    clock: FakeClock
    client: BraveClient
    service: ToolBoundary
    settings: Settings

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """One tool call that must end within the call deadline (plus a margin) whatever the upstream does."""
        with anyio.fail_after(self.settings.call_deadline_seconds + MARGIN):
            return await self.service.call(tool, arguments)


@asynccontextmanager
async def harness(fake: FakeBrave, *, base_url: str | None = None, **overrides: Any) -> AsyncIterator[Harness]:
    """A client on the fake's MockTransport, or on the real local server when ``base_url`` is given."""
    values: dict[str, Any] = {
        "retries": 2,
        "timeout_seconds": ATTEMPT_TIMEOUT,
        "call_deadline_seconds": CALL_DEADLINE,
        "max_response_bytes": CAP,
    }
    if base_url is not None:
        values["base_url"] = base_url
    values.update(overrides)
    settings = make_settings(**values)
    clock = FakeClock()
    transport = None if base_url is not None else fake.mock_transport()
    async with BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        yield Harness(fake, clock, client, service, settings)


def check_envelope(outcome: ToolOutcome, code: str | None, retryable: bool) -> dict[str, Any]:
    """The outcome is the expected envelope, and its text is the agent-readable rendering of it."""
    envelope = outcome.structured
    assert envelope["api_version"] == "v1"
    assert "Traceback" not in outcome.text
    if code is None:
        assert not outcome.is_error, outcome.text
        assert "error" not in envelope
        return {}
    assert outcome.is_error
    error: dict[str, Any] = envelope["error"]
    assert (error["code"], error["retryable"]) == (code, retryable), error
    assert outcome.text.startswith(code)
    assert error["message"]
    return error


async def summarizer_key(h: Harness) -> str:
    outcome = await h.call("brave_web_search", {"query": "what is asyncio", "summary": True})
    key = outcome.structured["summarizer_key"]
    assert isinstance(key, str) and key
    return key


async def run_case(h: Harness, fault: Fault, target: str) -> None:
    """Inject ``fault`` where ``target`` reaches the upstream, call, check everything, then call again."""
    kind, _, sub = target.partition(":")
    retries = h.settings.retries
    expected_attempts = fault.attempts_for(retries)
    times = fault.times_for(retries)
    if kind == "help":
        # Help never touches the upstream: it answers while every request would fail.
        h.fake.inject(fault.name, times=times, **fault.options)
        outcome = await h.call("brave_web_search_help", {"topic": "errors"})
        check_envelope(outcome, None, False)
        assert "RATE_LIMITED" in outcome.text
        assert h.fake.hits() == 0
        assert h.fake.pending_faults() == times
        return

    args: dict[str, Any]
    again: dict[str, Any]
    if kind == "web":
        tool, path = "brave_web_search", SEARCH_PATHS[sub]
        args = {"query": f"fault {fault.id}", "search_type": sub}
        again = {"query": "after the fault", "search_type": sub}
    elif kind == "status":
        tool, path = "brave_web_search_status", SEARCH_PATHS[sub]
        args = again = {"probe_connectivity": True}
    elif sub == "query":
        tool, path = "brave_summarizer", WEB_PATH  # the search step
        args, again = {"query": "what is asyncio"}, {"query": "what is trio"}
    else:
        tool, path = "brave_summarizer", SUMMARIZER_PATH  # the poll step
        args = again = {"key": await summarizer_key(h)}

    hits_before, sleeps_before = h.fake.hits(path), len(h.clock.sleeps)
    polls_before = h.fake.hits(SUMMARIZER_PATH)
    h.fake.inject(fault.name, path=path, times=times, **fault.options)
    outcome = await h.call(tool, args)

    assert h.fake.hits(path) - hits_before == expected_attempts
    assert h.fake.pending_faults() == 0
    if kind == "status":
        # A failing probe degrades the report; the status call itself is not an error.
        check_envelope(outcome, None, False)
        report = outcome.structured
        probes = {p["search_type"]: p for p in report["probe"]}
        assert list(probes) == list(SEARCH_TYPES)
        faulted = probes[sub]
        if fault.code == "QUOTA_EXCEEDED":
            # A used-up month closes the gate for the key: later probes fail at once, sending nothing.
            later = list(SEARCH_TYPES)[list(SEARCH_TYPES).index(sub) :]
            assert all(probes[name]["code"] == "QUOTA_EXCEEDED" for name in later)
            assert report["status"] == "paused"  # the quota gate holds: never "ok" (issue 22 item 1)
            assert report["reasons"][0].startswith("Brave: the monthly quota is used up")
            hits_before = h.fake.hits(path)
            after = await h.call(tool, again)
            assert all(p["code"] == "QUOTA_EXCEEDED" for p in after.structured["probe"])
            assert h.fake.hits(path) == hits_before
            return
        if fault.code is None:
            assert report["status"] == "ok"
            assert faulted["ok"] is True
            assert faulted["attempts"] == expected_attempts
        else:
            assert report["status"] == "degraded"
            assert (faulted["ok"], faulted["code"], faulted["retryable"]) == (False, fault.code, fault.retryable)
            assert f"probe failed for {sub}" in report["reasons"]
            assert f"probe {sub}: {fault.code}" in outcome.text
        assert all(p["ok"] for name, p in probes.items() if name != sub)
    else:
        error = check_envelope(outcome, fault.code, fault.retryable)
        if error:
            assert error["details"]["attempts"] == expected_attempts
        if target == "summarizer:query" and fault.code is not None:
            assert h.fake.hits(SUMMARIZER_PATH) == polls_before  # a failed search step never polls

    waits = h.clock.sleeps[sleeps_before:]
    if kind == "status" and fault.code == "RATE_LIMITED" and sub != SEARCH_TYPES[-1]:
        # The last 429 also holds the throttle for Brave's wait, so the next probe waits it out first.
        assert waits.pop() == fault.wait
    assert len(waits) == expected_attempts - 1
    if fault.wait is not None:
        assert waits == [fault.wait] * (expected_attempts - 1)  # Brave's wait, honoured exactly
    else:
        assert all(0 < w <= RETRY_MAX for w in waits)  # exponential backoff, capped

    hits_before = h.fake.hits(path)
    if fault.code == "QUOTA_EXCEEDED":
        # Brave said the month is used up: the next fresh call fails at once and sends nothing.
        after = await h.call(tool, again)
        check_envelope(after, "QUOTA_EXCEEDED", False)
        assert "resets_at" in after.structured["error"]["details"]
        assert h.fake.hits() - hits_before <= h.fake.hits() - h.fake.hits(path)  # nothing new on this path
        assert h.fake.hits(path) == hits_before
        return
    # The server goes on: the same tool, with a clean upstream, answers correctly.
    after = await h.call(tool, again)
    check_envelope(after, None, False)
    assert h.fake.hits(path) - hits_before == 1
    if kind == "status":
        assert after.structured["status"] == "ok"
    elif kind == "web":
        assert after.structured["meta"]["returned"] > 0
        assert after.structured["meta"]["search_type"] == sub
    else:
        assert after.structured["summary_text"]


# -- the matrix -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "target"), _matrix(HTTP_FAULTS, every_search_type=True))
async def test_http_fault_through_every_tool(fault: Fault, target: str) -> None:
    fake = new_fake()
    async with harness(fake, **fault.settings) as h:
        await run_case(h, fault, target)


@pytest.fixture
def counting_server() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(new_fake()) as server:
        yield server


@pytest.mark.parametrize(("fault", "target"), _matrix(SERVER_FAULTS, every_search_type=False))
async def test_real_socket_fault_through_every_tool(
    fault: Fault, target: str, counting_server: FakeBraveServer
) -> None:
    # One retry keeps the real-time faults (0.2 s per attempt) cheap; the mock matrix covers retries=2.
    async with harness(counting_server.fake, base_url=counting_server.base_url, retries=1, **fault.settings) as h:
        await run_case(h, fault, target)


async def test_oversize_stream_is_abandoned_not_read_whole(counting_server: FakeBraveServer) -> None:
    fake = counting_server.fake
    assert isinstance(fake, CountingFake)
    fake.inject("oversize", size=OVERSIZE, gzip=False)
    async with harness(fake, base_url=counting_server.base_url) as h:
        outcome = await h.call("brave_web_search", {"query": "huge"})
    error = check_envelope(outcome, "RESPONSE_TOO_LARGE", False)
    assert error["details"]["limit_bytes"] == CAP
    assert fake.hits() == 1
    # The client hung up: the fake's stream ended early (socket error), long before its 32 MiB were produced.
    assert await anyio.to_thread.run_sync(fake.stream_closed.wait, 5.0)
    assert CAP < fake.streamed_bytes < OVERSIZE // 2


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there any more: connecting is refused at once


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("brave_web_search", {"query": "refused", "search_type": "videos"}),
        ("brave_summarizer", {"query": "refused"}),
        ("brave_summarizer", {"key": '{"query": "refused"}'}),
    ],
    ids=["web", "summarizer-query", "summarizer-key"],
)
async def test_connection_refused_for_real(tool: str, arguments: dict[str, Any]) -> None:
    fake = new_fake()
    async with harness(fake, base_url=f"http://127.0.0.1:{_closed_port()}") as h:
        outcome = await h.call(tool, arguments)
        error = check_envelope(outcome, "NETWORK_ERROR", True)
        assert error["details"]["attempts"] == h.settings.retries + 1
        assert "Traceback" not in error["message"]
        counters = h.client.counters()
        endpoint = "summarizer" if "key" in arguments else arguments.get("search_type", "web")
        assert counters[endpoint].requests == h.settings.retries + 1
        assert len(h.clock.sleeps) == h.settings.retries
        # The server goes on: help still answers.
        check_envelope(await h.call("brave_web_search_help", {"topic": "limits"}), None, False)


async def test_connection_refused_degrades_every_status_probe() -> None:
    fake = new_fake()
    async with harness(fake, base_url=f"http://127.0.0.1:{_closed_port()}") as h:
        outcome = await h.call("brave_web_search_status", {"probe_connectivity": True, "verbose": True})
    check_envelope(outcome, None, False)
    report = outcome.structured
    assert report["status"] == "degraded"
    assert [(p["code"], p["retryable"]) for p in report["probe"]] == [("NETWORK_ERROR", True)] * 4
    for kind in SEARCH_TYPES:
        assert report["counters"][kind]["requests"] == h.settings.retries + 1


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
