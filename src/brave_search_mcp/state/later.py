"""Store writes that can wait until the answer is out: the agent's reply goes first, the bookkeeping after.

A miss's answer is stored in the shared cache (and its single-flight lease released) by a task of its own, which
the event loop runs once the call's task has handed its reply to the transport: the write leaves the request's
path, as Node leaves its collector to helper threads. While other calls are in flight (``busy``) it waits for them
too, at most ``HOLD_SECONDS``: ten calls at once answer first and write after. Nothing waits on it but ``settle`` (a
closing backend, so the next process finds the answer); another process asking for the same answer meanwhile
waits on the lease, which the write releases, as it did before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator

logger = logging.getLogger(__name__)

HOLD_SECONDS = 0.05  # the longest a write waits for the calls in flight (a server that is never idle still writes)


class Later:
    """The writes of one backend that run after the reply; each one's failure is logged, never raised."""

    def __init__(self, hold_seconds: float = HOLD_SECONDS) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._hold = hold_seconds
        self._active = 0
        self._quiet: asyncio.Event | None = None  # set when the last call in flight ends

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """One call in flight: writes deferred meanwhile wait until none is (or ``hold_seconds``)."""
        if self._active == 0:
            self._quiet = asyncio.Event()
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1
            if self._active == 0 and self._quiet is not None:
                self._quiet.set()

    def run(self, op: Callable[[], Awaitable[None]]) -> None:
        """Start ``op`` once the running task yields (after it wrote its reply) and no other call is in flight."""
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
        quiet = self._quiet
        if self._active and quiet is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(quiet.wait(), self._hold)
        try:
            await op()
        except Exception:
            logger.exception("a deferred write to the shared state failed")
