"""Summarizer polling: growing waits, deadlines, the poll cap, parameters, and the errors an agent reads."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.summarizer import MAX_POLLS, PollSchedule, fetch_summary
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    ErrorCode,
    InvalidArgument,
    NetworkError,
    NotInPlan,
    QuotaExceeded,
    RateLimited,
    SummaryUnavailable,
    UpstreamTimeout,
)
from testkit.clock import FakeClock
from tests.brave.summary_source import JSON_KEY, PENDING, SIMPLE, FakeSource, complete, run, run_error, tok

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------------------------------------
# Polling


async def test_pending_then_complete_waits_with_growing_intervals() -> None:
    summary, source, clock = await run([PENDING, PENDING, {"type": "summarizer"}, SIMPLE])

    assert summary.text == "K2 is the second highest mountain."
    assert summary.status == "complete"
    assert summary.polls == 4
    assert len(source.calls) == 4
    assert clock.sleeps == [0.25, 0.5, 1.0]  # first poll at once, then one wait before each later poll
    assert all(later > earlier for earlier, later in zip(clock.sleeps, clock.sleeps[1:], strict=False))
    gaps = [b.at - a.at for a, b in zip(source.calls, source.calls[1:], strict=False)]
    assert all(gap >= 0.25 for gap in gaps)


async def test_intervals_stop_growing_at_max_interval() -> None:
    _, _, clock = await run([PENDING] * 6 + [SIMPLE])

    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]


async def test_first_delay_is_waited_before_the_first_poll() -> None:
    schedule = PollSchedule(first_delay=0.1, initial_interval=0.3, factor=1.5, max_interval=1.0)

    summary, source, clock = await run([PENDING, PENDING, SIMPLE], schedule=schedule)

    assert clock.sleeps == [0.1, 0.3, pytest.approx(0.45)]
    assert source.calls[0].at == pytest.approx(1000.1)
    assert summary.polls == 3


async def test_complete_on_first_poll_never_sleeps() -> None:
    summary, _, clock = await run([SIMPLE])

    assert clock.sleeps == []
    assert summary.polls == 1


async def test_failed_is_terminal_and_says_so() -> None:
    error, source, _ = await run_error([PENDING, {"type": "summarizer", "status": "failed"}, SIMPLE])

    assert isinstance(error, SummaryUnavailable)
    assert error.code is ErrorCode.SUMMARY_UNAVAILABLE
    assert error.message == "Unable to retrieve a Summarizer summary."
    assert error.details == {"reason": "failed", "polls": 2}
    assert len(source.calls) == 2  # no poll after "failed"


async def test_deadline_stops_polling_without_oversleeping() -> None:
    error, source, clock = await run_error([PENDING])

    assert isinstance(error, SummaryUnavailable)
    assert error.retryable is True
    assert error.message == "Unable to retrieve a Summarizer summary. (reason: the summary was not ready within 20 s)"
    assert error.details["reason"] == "deadline"
    assert error.details["polls"] == len(source.calls)
    assert sum(clock.sleeps) <= 20.0
    assert clock.now - 1000.0 <= 20.0
    assert 5 <= len(source.calls) <= 15  # 0, .25, .75, 1.75, 3.75, then every 2 s up to 20 s
    assert all(0 < wait <= 2.0 for wait in clock.sleeps)


async def test_deadline_counts_time_spent_in_requests() -> None:
    error, source, _ = await run_error([PENDING], request_seconds=3.0)

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "deadline"
    assert all(call.at - 1000.0 <= 20.0 for call in source.calls)
    assert len(source.calls) < 8  # fewer polls than with instant answers


async def test_custom_deadline_is_named_in_the_message() -> None:
    schedule = PollSchedule(deadline=2.5)

    error, source, clock = await run_error([PENDING], schedule=schedule)

    assert "within 2.5 s" in error.message
    assert sum(clock.sleeps) <= 2.5
    assert len(source.calls) == 4  # at 0, .25, .75, 1.75; the next 2 s wait would pass 2.5 s


async def test_first_delay_beyond_the_deadline_gives_up_without_polling() -> None:
    error, source, clock = await run_error([SIMPLE], schedule=PollSchedule(first_delay=5.0, deadline=1.0))

    assert error.details["reason"] == "deadline"
    assert source.calls == []
    assert clock.sleeps == []


async def test_poll_count_is_capped_even_with_a_generous_deadline() -> None:
    schedule = PollSchedule(initial_interval=0.001, factor=1.0, max_interval=0.001, deadline=10_000.0)

    error, source, clock = await run_error([PENDING], schedule=schedule)

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "max_polls"
    assert len(source.calls) == MAX_POLLS == 100
    assert len(clock.sleeps) == MAX_POLLS - 1


@pytest.mark.parametrize(
    "body",
    [
        {"type": "summarizer", "status": "complete"},
        complete(),
        complete({"type": "enum_start", "data": "ol"}, {"type": "enum_end"}),
        complete(tok("   "), tok("<b></b>")),
        complete(title="Only a title", followups=["a follow-up"]),
        {"type": "summarizer", "status": "complete", "summary": "plain string, not messages"},
    ],
)
async def test_complete_without_usable_summary_is_empty(body: dict[str, Any]) -> None:
    error, _, _ = await run_error([body])

    assert isinstance(error, SummaryUnavailable)
    assert error.details == {"reason": "empty", "polls": 1}
    assert error.message.startswith("Unable to retrieve a Summarizer summary.")


@pytest.mark.parametrize("body", [["not", "a", "dict"], "text", None])
async def test_non_object_body_is_empty(body: Any) -> None:
    error, source, _ = await run_error([body])

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "empty"
    assert len(source.calls) == 1


async def test_params_carry_the_key_verbatim_and_no_flags_by_default() -> None:
    _, source, _ = await run([PENDING, SIMPLE], key=JSON_KEY)

    for call in source.calls:
        assert call.endpoint is Endpoint.SUMMARIZER
        assert call.params == [("key", JSON_KEY)]


@pytest.mark.parametrize(
    ("entity_info", "inline_references", "extra"),
    [
        (True, False, [("entity_info", "1")]),
        (False, True, [("inline_references", "1")]),
        (True, True, [("entity_info", "1"), ("inline_references", "1")]),
        (False, False, []),
    ],
)
async def test_flags_are_sent_only_when_true(
    entity_info: bool, inline_references: bool, extra: list[tuple[str, str]]
) -> None:
    _, source, _ = await run([SIMPLE], key=JSON_KEY, entity_info=entity_info, inline_references=inline_references)

    assert source.calls[0].params == [("key", JSON_KEY), *extra]


async def test_polls_bypass_the_cache_but_go_through_the_throttle() -> None:
    _, source, _ = await run([PENDING, PENDING, SIMPLE])

    assert [(c.use_cache, c.throttle) for c in source.calls] == [(False, True)] * 3


@pytest.mark.parametrize("key", ["", "   "])
async def test_blank_key_is_rejected_before_any_poll(key: str) -> None:
    clock = FakeClock()
    source = FakeSource([SIMPLE], clock)

    with pytest.raises(InvalidArgument) as info:
        await fetch_summary(source, key, clock=clock, sleep=clock.sleep)

    assert info.value.details["field"] == "key"
    assert source.calls == []


@pytest.mark.parametrize(
    ("status", "brave_code", "detail", "meta"),
    [
        (400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", {"component": "authentication"}),
        (403, "RESOURCE_NOT_ALLOWED", "The user is not authorized to access this resource.", {"component": "api"}),
    ],
)
async def test_not_in_plan_names_the_plan_needed(
    status: int, brave_code: str, detail: str, meta: dict[str, str]
) -> None:
    original = NotInPlan(detail, status=status, brave_code=brave_code, details=meta)

    error, source, _ = await run_error([original])

    assert isinstance(error, NotInPlan)
    assert error.code is ErrorCode.NOT_IN_PLAN
    assert '"Pro AI"' in error.message
    assert "legacy" in error.message
    assert detail in error.message
    assert error.details == {**original.details, "plan_needed": "Pro AI"}
    assert error.details["status"] == status
    assert error.details["brave_code"] == brave_code
    assert error.status == status
    assert error.brave_code == brave_code
    assert error.retryable is False
    assert error.__cause__ is original
    assert len(source.calls) == 1


@pytest.mark.parametrize(
    "original",
    [
        AuthFailed("The provided subscription token is invalid.", status=422, brave_code="SUBSCRIPTION_TOKEN_INVALID"),
        RateLimited("Request rate limit exceeded for plan.", status=429, brave_code="RATE_LIMITED"),
        QuotaExceeded("Request quota limit exceeded for plan.", status=429, brave_code="QUOTA_LIMITED"),
        UpstreamTimeout("Brave did not answer within 15 s."),
        NetworkError("Connection refused."),
    ],
)
async def test_other_errors_propagate_unchanged(original: BraveSearchError) -> None:
    error, source, _ = await run_error([PENDING, original])

    assert error is original
    assert error.message == original.args[0]
    assert "plan_needed" not in error.details
    assert len(source.calls) == 2


def test_schedule_rejects_back_to_back_polling_and_nonsense() -> None:
    with pytest.raises(ValueError, match="initial_interval"):
        PollSchedule(initial_interval=0)
    with pytest.raises(ValueError, match="factor"):
        PollSchedule(factor=0.5)
    with pytest.raises(ValueError, match="max_interval"):
        PollSchedule(initial_interval=3.0, max_interval=2.0)
    with pytest.raises(ValueError, match="deadline"):
        PollSchedule(deadline=0)
    with pytest.raises(ValueError, match="first_delay"):
        PollSchedule(first_delay=-1)
