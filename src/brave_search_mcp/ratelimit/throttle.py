"""A fair sliding-window rate limiter, so parallel agent calls queue instead of drawing 429s from Brave.

Brave counts requests in a 1-second *sliding* window per plan (reference/brave-api.md §7). The
throttle keeps a log of recent start times and lets a request start only when fewer than
``capacity`` requests started in the last ``window`` seconds, plus a small safety margin so that
network jitter cannot land two requests inside Brave's window. Waiters are served strictly in
arrival order; a waiter that is cancelled leaves at once without consuming a slot.

The plan Brave reports is a ceiling, not a promise. A learned plan rate is approached by slow start
(the rate doubles after each ``burst`` of clean answers, which on a truthful plan takes a few round
trips), and a 429 that contradicts the plan halves the rate in force (once per window) and holds it
there for a minute, after which the rate creeps back up by 10 % per clean burst: additive-increase /
multiplicative-decrease, as TCP does for the same reason.
"""

from __future__ import annotations

import math
from collections import deque

import anyio

from brave_search_mcp.clock import Clock, Sleep

# A start must be this much older than the window (relative, then absolute) before its slot is reused.
WINDOW_MARGIN_FACTOR = 1.03
WINDOW_MARGIN_SECONDS = 0.005
_EPSILON = 1e-9
MIN_RATE = 0.25  # never slower than one request per 4 s, however often Brave refuses
RECOVERY_FACTOR = 1.1
FAILED_RATE_MEMORY_SECONDS = 60.0


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
        # adaptation: the plan's ceiling, clean answers at this level, and the memory of a failed rate
        self._ceiling = self._rate
        self._ceiling_burst = burst
        self._successes = 0
        self._slow_start = True
        self._cap = math.inf
        self._cap_until = -math.inf
        self._last_penalty = -math.inf

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
        """Set the limits in force and the ceiling at once (an explicit setting; no adaptation above it)."""
        _check_limits(rate, burst)
        self._ceiling, self._ceiling_burst = float(rate), burst
        self._set(float(rate), burst)

    @property
    def ceiling(self) -> float:
        """The plan's per-second rate as learned (or set): the rate in force never exceeds it."""
        return self._ceiling

    def learn(self, rate: float, burst: int) -> None:
        """Brave reported the plan: make it the ceiling, and approach it by slow start rather than a jump."""
        _check_limits(rate, burst)
        self._ceiling, self._ceiling_burst = float(rate), burst
        in_force = min(self._rate, self._ceiling)
        self._set(in_force, max(1, min(self._burst, burst, math.floor(in_force))))

    def record_success(self) -> None:
        """One clean answer at the rate in force; after a full burst of them the rate grows."""
        self._successes += 1
        if self._successes < self._burst:
            return
        self._successes = 0
        limit = self._ceiling if self._clock() >= self._cap_until else min(self._ceiling, self._cap)
        grown = min(limit, self._rate * (2.0 if self._slow_start else RECOVERY_FACTOR))
        if grown > self._rate:
            self._set(grown, max(1, min(self._ceiling_burst, math.floor(grown))))

    def penalize(self) -> bool:
        """A 429 the plan did not predict: halve the rate in force (once per window); True when it changed."""
        now = self._clock()
        if now - self._last_penalty < self.window:
            return False
        failed = self._rate
        self._last_penalty = now
        self._slow_start = False
        self._successes = 0
        reduced = max(MIN_RATE, failed / 2.0)
        # Brave refused at `failed`, so its real limit lies below it: hold the halved rate for a minute
        # before creeping up again, rather than climbing straight back into the same refusals.
        self._cap, self._cap_until = reduced, now + FAILED_RATE_MEMORY_SECONDS
        self._set(reduced, max(1, min(self._ceiling_burst, math.floor(reduced))))
        return True

    def _set(self, rate: float, burst: int) -> None:
        if rate == self._rate and burst == self._burst:
            return
        self._rate = rate
        self._burst = burst
        self._wake_head()

    def earliest_start(self) -> float:
        """When a caller joining the queue now could start, if every caller ahead takes the next free slot."""
        now = self._clock()
        horizon = self.window * WINDOW_MARGIN_FACTOR + WINDOW_MARGIN_SECONDS
        starts = [t for t in self._starts if t + horizon > now]
        at = now
        for _ in range(len(self._queue) + 1):
            at = max(now, self._blocked_until)
            if len(starts) >= self._burst:
                at = max(at, starts[-self._burst] + horizon)
            starts.append(at)
        return at

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
