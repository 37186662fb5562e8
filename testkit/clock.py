"""The one fake clock: tests and bench advance time by sleeping on it, never on real time."""

from __future__ import annotations

import anyio


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def clock(self) -> float:
        """The clock as a bound method, for code that takes ``clock=fake.clock``."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Yield once (so other tasks run), then advance by the wait and record it."""
        self.sleeps.append(seconds)
        await anyio.lowlevel.checkpoint()
        self.now += max(0.0, seconds)
