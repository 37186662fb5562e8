"""The fault matrix's cases and harness: every fault the fake Brave can produce, what each must end as, in time."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.brave.brave import IMAGES_PATH, NEWS_PATH, SUMMARIZER_PATH, VIDEOS_PATH, WEB_PATH, FakeBrave, Reply
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

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
    # RFC 9110 §15.2: a client must read past an interim 1xx to the final answer (last, so the rotation of the
    # search types above stays as it was)
    Fault("early_hints", None, False, 1, label="103-early-hints-then-200"),
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
