"""A sliding-window start limiter, so we never send an upstream more than N requests in any window.

SearXNG instances (and the public ones' bot limiter) punish bursts; a token bucket would allow a
burst at the window edge, a sliding window of start times does not. Clock and sleep are injected
so tests advance a fake clock; waiting is an ordinary (cancellable) sleep.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from brave_search_mcp.clock import Clock
from brave_search_mcp.models.errors import RateLimited

__all__ = ["SlidingWindowLimiter"]


class SlidingWindowLimiter:
    """At most ``rate`` request starts in any ``window`` seconds; callers beyond that wait their turn."""

    def __init__(
        self,
        rate: int = 2,
        window: float = 1.0,
        *,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        if rate < 1 or window <= 0:
            raise ValueError("rate must be >= 1 and window > 0")
        self.rate = rate
        self.window = window
        self._clock = clock
        self._sleep = sleep
        self._starts: deque[float] = deque()

    def _wait_needed(self, now: float) -> float:
        while self._starts and self._starts[0] <= now - self.window:
            self._starts.popleft()
        if len(self._starts) < self.rate:
            return 0.0
        return self._starts[0] + self.window - now

    async def acquire(self, deadline: float | None = None) -> None:
        """Wait until a start is allowed and claim it; fail fast with RATE_LIMITED if that is past ``deadline``."""
        while True:
            now = self._clock()
            wait = self._wait_needed(now)
            if wait <= 0:
                self._starts.append(now)
                return
            if deadline is not None and now + wait > deadline:
                raise RateLimited(
                    f"The client-side limit ({self.rate} requests per {self.window:g} s) leaves no room "
                    "before this call's deadline; retry shortly.",
                    status=429,
                    retry_after=round(wait, 3),
                    details={"client_side": True},
                )
            await self._sleep(wait)
