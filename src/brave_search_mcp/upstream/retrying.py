"""The one retry loop every upstream client runs: tenacity's ``AsyncRetrying`` driven by the rule in ``retry.py``.

Each client builds one ``Retrier`` (its policy, clock, sleep and jitter source) and runs every call through it.
tenacity keeps a run's state on the retrying object (``iter_state`` and ``statistics`` live in a
``threading.local``, which every task of one event loop shares), so each call runs on a ``copy()`` of the one object,
and the call's own bounds (its deadline, its number of tries, whether only a 429 may be retried) travel as the
call's keyword argument, where tenacity hands them to the strategies (``RetryCallState.kwargs``).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar, cast

from tenacity import AsyncRetrying, RetryCallState

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.upstream.retry import RetryPolicy

T = TypeVar("T")


@dataclass(frozen=True)
class _Bounds:
    """One call's limits: the policy it runs under and the deadline on the client's clock."""

    policy: RetryPolicy
    deadline: float | None


async def _run(attempt: Callable[[], Awaitable[T]], *, bounds: _Bounds) -> T:
    """One try (``bounds`` is only there for the strategies to read)."""
    del bounds
    return await attempt()


class Retrier:
    """Retries a call while the policy says a later try can succeed and its wait fits before the call's deadline."""

    def __init__(
        self, policy: RetryPolicy, *, clock: Clock, sleep: Sleep, rng: Callable[[], float] = random.random
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._rng = rng
        self._retrying = AsyncRetrying(sleep=sleep, retry=self._retry, wait=self._wait, stop=self._stop, reraise=True)

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        deadline: float | None = None,
        retries: int | None = None,
        rate_limited_only: bool = False,
    ) -> T:
        """Run ``attempt`` until it succeeds, fails in a way no later try can fix, or the tries are spent; the
        last failure is raised as it was. ``retries`` overrides the policy's count for this call."""
        policy = self.policy
        if retries is not None and retries != policy.retries:
            policy = replace(policy, retries=retries)
        if rate_limited_only and not policy.rate_limited_only:
            policy = replace(policy, rate_limited_only=True)
        result: object = await self._retrying.copy()(_run, attempt, bounds=_Bounds(policy, deadline))
        return cast("T", result)

    def _retry(self, state: RetryCallState) -> bool:
        """Whether the failure is one a later try can fix (only exceptions are; a result ends the call)."""
        outcome = state.outcome
        if outcome is None or not outcome.failed:
            return False
        exc = outcome.exception()
        if not isinstance(exc, Exception):  # a cancellation ends the call at once
            return False
        bounds = _bounds(state)
        return bounds.policy.should_retry(exc, now=self._clock(), deadline=bounds.deadline)

    def _wait(self, state: RetryCallState) -> float:
        """The upstream's demanded wait, else jittered exponential backoff (``RetryPolicy.wait``)."""
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None and outcome.failed else None
        return _bounds(state).policy.wait(state.attempt_number, exc, self._rng)

    def _stop(self, state: RetryCallState) -> bool:
        """Stop when the tries are spent or the coming wait leaves no time for a try before the deadline."""
        bounds = _bounds(state)
        if state.attempt_number > bounds.policy.retries:
            return True
        return not bounds.policy.fits(state.upcoming_sleep, now=self._clock(), deadline=bounds.deadline)


def _bounds(state: RetryCallState) -> _Bounds:
    bounds = state.kwargs["bounds"]
    assert isinstance(bounds, _Bounds)
    return bounds
