"""Store writes no caller waits for, started at once in a task group the backend's owner runs (structured).

A miss's answer is stored in the shared cache (and its single-flight lease released, which wakes the other
processes waiting for it) as soon as it is fetched: the write starts then, in the task group of whoever opened the
backend (``compose.open_backend``, which the server's and the library's lifespans enter), and the reply does not
wait for it. Nothing defers it: another process may be waiting on exactly that write. Closing the backend waits for
the writes started (``settle``), and each runs shielded from cancellation for at most ``WRITE_SECONDS``, so a
shutdown never loses an answer fetched and paid for. A backend nobody gave a task group (a test, a short script)
writes inline, before the reply.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
from anyio.abc import TaskGroup

logger = logging.getLogger(__name__)

WRITE_SECONDS = 5.0  # the longest one write may take once started, even at shutdown (a store that hangs)

Op = Callable[[], Awaitable[None]]


class Later:
    """The writes of one backend that run beside the reply; each one's failure is logged, never raised."""

    def __init__(self) -> None:
        self._tasks: TaskGroup | None = None
        self._unfinished = 0
        self._idle = anyio.Event()
        self._idle.set()

    @contextlib.asynccontextmanager
    async def owned(self) -> AsyncIterator[None]:
        """Run the writes in a task group for as long as this lasts; on exit, the writes started finish first."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None  # writes queued from now on run inline; those started finish as the group ends

    async def run(self, op: Op) -> None:
        """Start ``op`` now beside the caller (in the owner's task group), or run it inline when there is none."""
        self._unfinished += 1
        if self._unfinished == 1:
            self._idle = anyio.Event()
        if self._tasks is None:
            await self._write(op)
        else:
            self._tasks.start_soon(self._write, op)

    @property
    def pending(self) -> int:
        """Writes started and not finished."""
        return self._unfinished

    async def settle(self) -> None:
        """Wait until every write started so far (and any started meanwhile) has finished."""
        await self._idle.wait()

    async def _write(self, op: Op) -> None:
        try:
            with anyio.move_on_after(WRITE_SECONDS, shield=True) as scope:
                await op()
            if scope.cancelled_caught:
                logger.error("a write to the shared state took longer than %g s and was abandoned", WRITE_SECONDS)
        except Exception:
            logger.exception("a write to the shared state failed")
        finally:
            self._unfinished -= 1
            if self._unfinished == 0:
                self._idle.set()
