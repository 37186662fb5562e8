"""A fair sliding-window rate limiter, so parallel agent calls queue instead of drawing 429s from Brave.

Brave counts requests in a 1-second *sliding* window per plan (reference/brave-api.md §7). The
throttle keeps a log of recent start times and lets a request start only when fewer than
``capacity`` requests started in the last ``window`` seconds, plus a small safety margin so that
network jitter cannot land two requests inside Brave's window. Waiters are served strictly in
arrival order; a waiter that is cancelled leaves at once without consuming a slot.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

# A start must be this much older than the window (relative, then absolute) before its slot is reused.
WINDOW_MARGIN_FACTOR = 1.03
WINDOW_MARGIN_SECONDS = 0.005
_EPSILON = 1e-9


class _Waiter:
    """One queued caller; ``turn`` is set when it reaches the head of the queue."""

    __slots__ = ("turn",)

    def __init__(self) -> None:
        self.turn = anyio.Event()


def _check_limits(rate: float, burst: int) -> None:
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be a positive number of requests per second, got {rate!r}")
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        raise ValueError(f"burst must be a whole number of at least 1, got {burst!r}")


class Throttle:
    """Lets at most ``burst`` requests start per ``burst / rate`` seconds, first come first served."""

    def __init__(self, rate: float, burst: int, *, clock: Clock, sleep: Sleep) -> None:
        _check_limits(rate, burst)
        self._rate = float(rate)
        self._burst = burst
        self._clock = clock
        self._sleep = sleep
        self._starts: deque[float] = deque()
        self._queue: deque[_Waiter] = deque()
        self._blocked_until = -math.inf
        self._wake: anyio.CancelScope | None = None

    @property
    def rate(self) -> float:
        """Requests per second currently allowed on average."""
        return self._rate

    @property
    def burst(self) -> int:
        """Requests allowed inside one window."""
        return self._burst

    @property
    def window(self) -> float:
        """Length in seconds of the sliding window (burst / rate)."""
        return self._burst / self._rate

    @property
    def waiting(self) -> int:
        """How many callers are queued right now (for status reporting)."""
        return len(self._queue)

    def update(self, rate: float, burst: int) -> None:
        """Change the limits live, e.g. once Brave reports the plan's real per-second limit."""
        _check_limits(rate, burst)
        if rate == self._rate and burst == self._burst:
            return
        self._rate = float(rate)
        self._burst = burst
        self._wake_head()

    @property
    def blocked_until(self) -> float:
        """No start before this clock time (minus infinity when not blocked)."""
        return self._blocked_until

    def block_until(self, t: float) -> None:
        """Forbid any start before clock time ``t`` (Brave said the window is used up, maybe by another process)."""
        if t > self._blocked_until:
            self._blocked_until = t

    async def acquire(self) -> float:
        """Wait for a slot in arrival order and return the seconds waited; cancellation leaves the queue at once."""
        started = self._clock()
        waiter = _Waiter()
        self._queue.append(waiter)
        try:
            if self._queue[0] is not waiter:
                await waiter.turn.wait()
            while True:
                now = self._clock()
                delay = self._ready_at(now) - now
                if delay <= _EPSILON:
                    break
                with anyio.CancelScope() as wake:
                    self._wake = wake
                    try:
                        await self._sleep(delay)
                    finally:
                        self._wake = None
            self._starts.append(now)
            return max(0.0, now - started)
        finally:
            self._leave(waiter)

    def _ready_at(self, now: float) -> float:
        """The earliest clock time at which the head of the queue may start."""
        horizon = self.window * WINDOW_MARGIN_FACTOR + WINDOW_MARGIN_SECONDS
        starts = self._starts
        while starts and starts[0] + horizon <= now:
            starts.popleft()
        ready = self._blocked_until
        if len(starts) >= self._burst:
            ready = max(ready, starts[-self._burst] + horizon)
        return ready

    def _leave(self, waiter: _Waiter) -> None:
        """Drop ``waiter`` from the queue; if it was the head, hand the turn to the next one."""
        if self._queue and self._queue[0] is waiter:
            self._queue.popleft()
            if self._queue:
                self._queue[0].turn.set()
        elif waiter in self._queue:
            self._queue.remove(waiter)

    def _wake_head(self) -> None:
        """Interrupt the head's sleep so it recomputes its start time under new limits."""
        if self._wake is not None:
            self._wake.cancel()
