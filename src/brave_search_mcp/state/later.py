"""Store writes that can wait until the answer is out: the agent's reply goes first, the bookkeeping after.

A miss's answer is stored in the shared cache (and its single-flight lease released) by a task of its own, which
the event loop runs once the call's task has handed its reply to the transport: the write leaves the request's
path, as Node leaves its collector to helper threads. It first gives the client's next call ``GRACE_SECONDS`` to
arrive (an agent's calls come in runs), then runs as soon as no call in flight needs the event loop: none is in flight
(``busy``), or every one is waiting on its upstream (``away``), which is when the loop has nothing else to do; never
later than ``HOLD_SECONDS``. Ten calls at once answer first and write after, or while they wait on Brave. Nothing waits
on it but ``settle`` (a closing backend, so the next process finds the answer); another process asking for the same
answer meanwhile waits on the lease, which the write releases, as it did before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator

logger = logging.getLogger(__name__)

HOLD_SECONDS = 0.05  # the longest a write waits for the calls in flight (a server that is never idle still writes)
GRACE_SECONDS = 0.002  # after a reply, how long a write leaves the loop to the client's next call


class Later:
    """The writes of one backend that run after the reply; each one's failure is logged, never raised."""

    def __init__(
        self,
        hold_seconds: float = HOLD_SECONDS,
        grace_seconds: float = GRACE_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._hold, self._grace, self._sleep = hold_seconds, grace_seconds, sleep
        self._active = self._away = 0  # calls in flight; of them, waiting on their upstream
        self._free: asyncio.Event | None = None  # set while no call in flight needs the loop

    @contextlib.contextmanager
    def _counted(self, active: int, away: int) -> Iterator[None]:
        """Count a call in (``active``) or its wait on the upstream (``away``) for the block; ``_free`` follows."""
        self._active, self._away = self._active + active, self._away + away
        self._changed()
        try:
            yield
        finally:
            self._active, self._away = self._active - active, self._away - away
            self._changed()

    def _changed(self) -> None:
        if self._active <= self._away:
            if self._free is not None:
                self._free.set()
        elif self._free is None or self._free.is_set():
            self._free = asyncio.Event()

    def busy(self) -> contextlib.AbstractContextManager[None]:
        """One call in flight: deferred writes wait while it needs the loop (or ``hold_seconds``)."""
        return self._counted(1, 0)

    def away(self) -> contextlib.AbstractContextManager[None]:
        """A call waiting on its upstream: meanwhile it leaves the loop to the deferred writes."""
        return self._counted(0, 1)

    def run(self, op: Callable[[], Awaitable[None]]) -> None:
        """Start ``op`` after the grace, once no call in flight needs the loop (see the module)."""
        task = asyncio.get_running_loop().create_task(self._after_calls(op))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def pending(self) -> int:
        """Writes started and not finished."""
        return len(self._tasks)

    async def settle(self) -> None:
        """Wait until every write started so far (and any it started) has finished."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _after_calls(self, op: Callable[[], Awaitable[None]]) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + self._hold
        await self._sleep(min(self._grace, self._hold))
        while self._active > self._away and (left := end - loop.time()) > 0 and self._free is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._free.wait(), left)
        try:
            await op()
        except Exception:
            logger.exception("a deferred write to the shared state failed")
