"""Store writes that can wait until the answer is out: the agent's reply goes first, the bookkeeping after.

A miss's answer is stored in the shared cache (and its single-flight lease released) by a task of its own, which
the event loop runs once the call's task has handed its reply to the transport: the write leaves the request's
path, as Node leaves its collector to helper threads. Nothing waits on it but ``settle`` (a closing backend, so the
next process finds the answer); another process asking for the same answer meanwhile waits on the lease, which the
write releases, as it did before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


class Later:
    """The writes of one backend that run after the reply; each one's failure is logged, never raised."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def run(self, op: Callable[[], Awaitable[None]]) -> None:
        """Start ``op`` once the running task yields (after it wrote its reply)."""
        task = asyncio.get_running_loop().create_task(self._logged(op))
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

    @staticmethod
    async def _logged(op: Callable[[], Awaitable[None]]) -> None:
        try:
            await op()
        except Exception:
            logger.exception("a deferred write to the shared state failed")
