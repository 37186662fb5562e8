"""One notion of time for every layer: a monotonic clock and a sleep, injected so tests never wait on real time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

Clock = Callable[[], float]


Sleep = Callable[[float], Awaitable[None]]


def moved(t: float, source: Clock, target: Clock) -> float:
    """A time on ``source``'s clock, on ``target``'s: a call's monotonic deadline as a shared store's wall time."""
    return target() + (t - source())
