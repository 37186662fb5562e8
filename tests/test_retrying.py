"""The one retry loop (tenacity under ``upstream.retrying.Retrier``): calls at once keep their own tries, deadlines
and waits, and no try is waited for that could not start before the call's deadline. On the fake clock."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tenacity import AsyncRetrying

from brave_search_mcp.models import errors
from brave_search_mcp.upstream.retry import RetryPolicy
from brave_search_mcp.upstream.retrying import Retrier
from testkit.clock import FakeClock

pytestmark = pytest.mark.anyio


class Flaky:
    """An upstream call that fails ``failures`` times with ``error``, then answers ``answer``."""

    def __init__(self, failures: int, answer: str, error: errors.BraveSearchError | None = None) -> None:
        self.failures, self.answer = failures, answer
        self.error = error or errors.UpstreamError("boom", status=503)
        self.tries = 0

    async def __call__(self) -> str:
        self.tries += 1
        await anyio.lowlevel.checkpoint()  # another call runs here
        if self.tries <= self.failures:
            raise self.error
        return self.answer


def retrier(clock: FakeClock, retries: int = 3) -> Retrier:
    return Retrier(RetryPolicy(retries, base_seconds=0.25, max_seconds=5.0), clock=clock, sleep=clock.sleep,
                   rng=lambda: 0.5)  # fmt: skip


async def test_two_calls_at_once_on_one_retrier_keep_their_own_tries_and_deadlines() -> None:
    clock = FakeClock()
    one = retrier(clock)
    slow_then_ok = Flaky(2, "first")
    fails_past_its_deadline = Flaky(5, "never")
    capped = Flaky(5, "never")
    outcomes: dict[str, object] = {}

    async def run(name: str, call: Flaky, deadline: float | None = None, retries: int | None = None) -> None:
        try:
            outcomes[name] = await one.run(call, deadline=deadline, retries=retries)
        except errors.UpstreamError as exc:
            outcomes[name] = exc

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "ok", slow_then_ok)
            tg.start_soon(run, "deadline", fails_past_its_deadline, clock() + 0.6)
            tg.start_soon(run, "retries", capped, None, 1)
    assert outcomes["ok"] == "first" and slow_then_ok.tries == 3
    # 0.25 s, then 0.5 s: the second wait would end past 0.6 s, so that call stops after two tries
    assert isinstance(outcomes["deadline"], errors.UpstreamError) and fails_past_its_deadline.tries == 2
    assert isinstance(outcomes["retries"], errors.UpstreamError) and capped.tries == 2
    assert one.policy.retries == 3  # a call's own count changed nothing for the others


async def test_a_backoff_that_would_end_at_the_deadline_is_not_waited_for() -> None:
    clock = FakeClock()
    call = Flaky(1, "late")
    with pytest.raises(errors.UpstreamError):
        await retrier(clock).run(call, deadline=clock() + 0.2)  # the first wait is 0.25 s
    assert call.tries == 1 and clock.sleeps == []
    call = Flaky(1, "in time")
    assert await retrier(clock).run(call, deadline=clock() + 1.0) == "in time"
    assert call.tries == 2 and clock.sleeps == [0.25]


async def test_the_last_failure_is_raised_as_it_was_once_the_tries_are_spent() -> None:
    clock = FakeClock()
    failure = errors.NetworkError("reset", retryable=True)
    call = Flaky(9, "never", failure)
    with pytest.raises(errors.NetworkError) as info:
        await retrier(clock, retries=2).run(call)
    assert info.value is failure and call.tries == 3
    assert clock.sleeps == [0.25, 0.5]


async def test_only_a_429_is_retried_when_the_call_says_so() -> None:
    clock = FakeClock()
    limited = Flaky(1, "after the 429", errors.RateLimited("slow down", status=429, retry_after=1.0))
    assert await retrier(clock).run(limited, rate_limited_only=True) == "after the 429"
    assert clock.sleeps == [1.0]
    broken = Flaky(1, "never", errors.UpstreamError("boom", status=503))
    with pytest.raises(errors.UpstreamError):
        await retrier(clock).run(broken, rate_limited_only=True)
    assert broken.tries == 1


async def test_each_call_runs_on_its_own_tenacity_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """tenacity keeps a run's statistics and iteration state on the retrying object, in a ``threading.local`` every
    task of one event loop shares: two calls at once each run on their own, and each one's figures are its own."""
    ran: list[AsyncRetrying] = []
    run_one = AsyncRetrying.__call__

    async def watched(self: AsyncRetrying, fn: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(self)
        return await run_one(self, fn, *args, **kwargs)

    monkeypatch.setattr(AsyncRetrying, "__call__", watched)
    clock = FakeClock()
    one = retrier(clock)
    third_time, first_time = Flaky(2, "third"), Flaky(0, "first")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one.run, third_time)
            tg.start_soon(one.run, first_time)
    assert (third_time.tries, first_time.tries) == (3, 1)
    assert len({id(r) for r in ran}) == 2
    assert sorted(r.statistics["attempt_number"] for r in ran) == [1, 3]
