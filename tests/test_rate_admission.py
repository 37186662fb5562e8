"""Issue 22 in-process, on a fake clock: one admission for GETs and the streamed POST, the half-open quota gate, the
spending cap, ``paused`` in the status report, and the call log counting the requests the envelope counts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import CALL_LOGGER
from brave_search_mcp.ratelimit.admission import utc_month
from brave_search_mcp.tools.boundary import ToolBoundary
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio
SIXTEEN_DAYS = 16 * 86400


@asynccontextmanager
async def tools_over(fake: FakeBrave, clock: FakeClock, **overrides: Any) -> AsyncIterator[ToolBoundary]:
    settings = make_settings(**overrides)
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        yield tool_boundary(settings, client, clock=clock, sleep=clock.sleep)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def call_log() -> Iterator[list[logging.LogRecord]]:
    """The boundary's one log line per call."""
    logger = logging.getLogger(CALL_LOGGER)
    kept, level = _Kept(), logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(kept)
    try:
        yield kept.records
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)


ANSWER = ("brave_answer", {"question": "why is the sky blue?"})
SEARCH = ("brave_web_search", {"query": "counted"})


@pytest.mark.parametrize(
    ("call", "fault", "sent"),
    [
        (SEARCH, None, 1),
        (SEARCH, ("503", "/web/search", 4), 4),
        (ANSWER, None, 1),
        (ANSWER, ("429", "/chat/completions", 1), 2),  # a 429 on the POST is retried: Brave did and billed nothing
        (ANSWER, ("503", "/chat/completions", 1), 1),  # anything else is not (it may have been paid for)
    ],
    ids=["get", "get-503x4", "answer", "answer-429-then-ok", "answer-503"],
)
async def test_the_call_log_counts_the_requests_the_envelope_counts(
    call: tuple[str, dict[str, Any]], fault: tuple[str, str, int] | None, sent: int, call_log: list[logging.LogRecord]
) -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    if fault is not None:
        fake.inject(fault[0], path=fault[1], times=fault[2])
    async with tools_over(fake, clock, retries=3) as tools:
        outcome = await tools.call(*call)
    envelope = outcome.structured
    counted = envelope["error"]["details"]["attempts"] if outcome.is_error else envelope["meta"]["attempts"]
    (line,) = [r for r in call_log if r.getMessage() == "tool call"]
    assert (counted, line.attempts, fake.hits()) == (sent, sent, sent)  # type: ignore[attr-defined]
    if outcome.is_error and envelope["error"]["code"] == "RATE_LIMITED":
        assert "even after retries" not in outcome.text


async def test_a_refusal_before_sending_counts_no_attempt_and_says_so(call_log: list[logging.LogRecord]) -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    async with tools_over(fake, clock, rate_limit=1.0, burst=1, call_deadline_seconds=0.5) as tools:
        assert not (await tools.call("brave_web_search", {"query": "takes the slot"})).is_error
        refused = await tools.call("brave_web_search", {"query": "no room before the deadline"})
    error = refused.structured["error"]
    assert (error["code"], error["details"]["attempts"], fake.hits()) == ("RATE_LIMITED", 0, 1)
    assert "nothing was sent" in error["message"] and "even after retries" not in refused.text
    assert [r.attempts for r in call_log if r.getMessage() == "tool call"] == [1, 0]  # type: ignore[attr-defined]


async def test_the_quota_gate_half_opens_every_ten_minutes() -> None:
    """Issue 22 item 1: a spent month closes the gate until the reset (16 days here); one request goes through
    every 10 minutes so an upgrade or an early reset is noticed; status says paused, why and until when."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    fake.inject("429_quota", month_reset=SIXTEEN_DAYS, times=2)
    async with tools_over(fake, clock) as tools:
        first = await tools.call("brave_web_search", {"query": "spends the month"})
        assert first.structured["error"]["code"] == "QUOTA_EXCEEDED" and fake.hits() == 1
        refused = await tools.call("brave_web_search", {"query": "gate closed"})
        error = refused.structured["error"]
        assert (error["code"], error["details"]["next_trial_seconds"], fake.hits()) == ("QUOTA_EXCEEDED", 600, 1)
        assert error["details"]["retry_after_seconds"] == pytest.approx(SIXTEEN_DAYS, abs=1)
        report = (await tools.call("brave_web_search_status", {})).structured
        assert report["status"] == "paused"
        assert report["reasons"][0].startswith("Brave: the monthly quota is used up; it resets at 20")
        assert "one trial request in 600 s" in report["reasons"][0]
        await clock.sleep(599)
        assert (await tools.call("brave_web_search", {"query": "still closed"})).is_error and fake.hits() == 1
        await clock.sleep(1)
        trial = await tools.call("brave_web_search", {"query": "the trial"})  # Brave: still spent
        assert trial.structured["error"]["code"] == "QUOTA_EXCEEDED" and fake.hits() == 2
        assert (await tools.call("brave_web_search", {"query": "closed again"})).is_error and fake.hits() == 2
        await clock.sleep(600)
        upgraded = await tools.call("brave_web_search", {"query": "after an upgrade"})  # Brave: months left
        assert not upgraded.is_error and fake.hits() == 3
        assert not (await tools.call("brave_web_search", {"query": "open again"})).is_error
        assert (await tools.call("brave_web_search_status", {})).structured["status"] == "ok"


async def test_status_says_paused_while_brave_demands_a_pause() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    fake.inject("429", retry_after=30)
    async with tools_over(fake, clock, retries=0) as tools:
        limited = await tools.call("brave_web_search", {"query": "pause"})
        assert limited.structured["error"]["code"] == "RATE_LIMITED"
        report = (await tools.call("brave_web_search_status", {})).structured
        assert report["status"] == "paused"
        assert report["reasons"][0].startswith("Brave: paused by Brave until 20")
        assert report["throttle"]["paused_for_seconds"] == pytest.approx(30, abs=0.1)
        await clock.sleep(31)
        assert (await tools.call("brave_web_search_status", {})).structured["status"] == "ok"


async def test_a_pause_that_ends_just_before_the_deadline_is_refused_at_once_not_slept_into() -> None:
    """Brave demanded 30 s; a call allowed 30.1 s would start with 0.1 s left for its request: it fails at once
    naming Brave's pause and the wait (not a queue that is not there), nothing sent; the start margin retries use."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    fake.inject("429", retry_after=30)
    async with tools_over(fake, clock, retries=0, call_deadline_seconds=30.1) as tools:
        await tools.call("brave_web_search", {"query": "pause"})
        started, sent = clock(), fake.hits()
        refused = await tools.call("brave_web_search", {"query": "within the pause"})
        error = refused.structured["error"]
        assert error["code"] == "RATE_LIMITED" and error["message"].startswith("The Brave API asked this key to pause")
        assert error["details"]["retry_after_seconds"] == pytest.approx(30, abs=0.1)
        assert (clock() - started, fake.hits()) == (0.0, sent)


async def test_the_spending_cap_counts_answered_requests_and_fails_fast_beyond_it() -> None:
    """Issue 22 item 2: beyond BRAVE_SEARCH_MONTHLY_REQUESTS calls fail fast naming the cap and the setting;
    cached answers still serve; a request Brave did not answer with success is not counted (not billed)."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    fake.inject("503", path="/web/search")
    async with tools_over(fake, clock, monthly_requests=3, retries=1) as tools:
        for n in range(3):
            assert not (await tools.call("brave_web_search", {"query": f"billed {n}"})).is_error
        assert fake.hits() == 4  # the first call's 503 was retried; it is not counted
        beyond = await tools.call("brave_web_search", {"query": "one too many"})
        answer = await tools.call("brave_answer", {"question": "also capped?"})
        cached = await tools.call("brave_web_search", {"query": "billed 1"})
        report = (await tools.call("brave_web_search_status", {})).structured
    error = beyond.structured["error"]
    assert (error["code"], error["retryable"], error["details"]["cap"], fake.hits()) == ("QUOTA_EXCEEDED", False, 3, 4)
    assert "3 requests per month (BRAVE_SEARCH_MONTHLY_REQUESTS)" in error["message"]
    assert answer.structured["error"]["code"] == "QUOTA_EXCEEDED"  # one budget for the key's every request
    assert not cached.is_error and cached.structured["meta"]["cached"] is True
    assert report["throttle"]["month"]["requests"] == 3 and report["throttle"]["month"]["cap"] == 3
    assert report["status"] == "paused" and "spending cap of 3 requests" in report["reasons"][0]


async def test_an_answer_and_searches_in_parallel_share_the_keys_window_and_cost_no_429() -> None:
    """Issue 22: the streamed POST skipped the shared admission; on a key whose one window allows 2/s (an Answers
    key: its web searches report 2/s too), three searches and one answer at once drew a 429."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=2, clock=clock)
    async with tools_over(fake, clock, rate_limit=None, burst=None) as tools:
        outcomes: list[bool] = []

        async def one(name: str, arguments: dict[str, Any]) -> None:
            outcomes.append(not (await tools.call(name, arguments)).is_error)

        with anyio.fail_after(10):
            for round_ in range(2):  # a fresh key, then one whose plan is known
                async with anyio.create_task_group() as tg:
                    for n in range(3):
                        tg.start_soon(one, "brave_web_search", {"query": f"parallel {round_} {n}"})
                    tg.start_soon(one, "brave_answer", {"question": f"in parallel {round_}?"})
                await clock.sleep(2)
    assert outcomes == [True] * 8
    assert fake.rate_limited_count == 0 and fake.hits() == 8


def test_the_month_a_booking_counts_in_is_utcs_calendar_month() -> None:
    """Read on every booking, so formatted by hand: the same text ``strftime("%Y-%m")`` gives."""
    before = datetime.now(UTC).strftime("%Y-%m")
    month = utc_month()
    assert month in {before, datetime.now(UTC).strftime("%Y-%m")}  # (a month may begin in between)
    assert len(month) == 7 and month[4] == "-"
