"""The one fake clock: tests and bench advance time by sleeping on it, never on real time."""

from __future__ import annotations

import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel


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


class ParallelClock(FakeClock):
    """The fake clock for many tasks at once: sleepers share one time line, so ten tasks sleeping a second at once
    take one second, not ten (``FakeClock`` adds each sleep to the clock).

    ``async with clock.running():`` starts its driver: each time the other tasks have had ``turns`` scheduling
    turns, it moves the clock to the earliest wake-up and wakes every sleeper due by then. ``turns`` must exceed
    the longest chain of steps between two sleeps (a request through a mock transport's own ``turns``).
    """

    def __init__(self, start: float = 1000.0, *, turns: int = 500) -> None:
        super().__init__(start)
        self._turns = turns
        self._wakeups: list[tuple[float, int, anyio.Event]] = []  # a heap: (when, order, event)
        self._order = itertools.count()

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock reaches now + ``seconds`` (the driver moves it)."""
        self.sleeps.append(seconds)
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        woken = anyio.Event()
        heapq.heappush(self._wakeups, (self.now + seconds, next(self._order), woken))
        await woken.wait()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ParallelClock]:
        """Drive the clock while the body runs."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._drive)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    async def _drive(self) -> None:
        while True:
            for _ in range(self._turns):
                await anyio.lowlevel.checkpoint()
            if not self._wakeups:
                continue
            due = self._wakeups[0][0]
            self.now = max(self.now, due)
            while self._wakeups and self._wakeups[0][0] <= due:
                heapq.heappop(self._wakeups)[2].set()  # a sleeper cancelled meanwhile ignores it
