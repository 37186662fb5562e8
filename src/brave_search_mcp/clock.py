"""One notion of time for every layer: a monotonic clock and a sleep, injected so tests never wait on real time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

Clock = Callable[[], float]


Sleep = Callable[[float], Awaitable[None]]
