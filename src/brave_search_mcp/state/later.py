"""Store writes that can wait until the answer is out: the agent's reply goes first, the bookkeeping after.

A miss's answer is stored in the shared cache (and its single-flight lease released), and a clean answer's count
towards confirming the plan written, by one task per backend that runs the deferred writes in order: they leave the
request's path, as Node leaves its collector to helper threads. That task first gives the client's next call
``GRACE_SECONDS`` to arrive (an agent's calls come in runs), then runs each write once no call is in flight (``busy``
around every tool call): ten calls at once answer first and write after. No write waits longer than ``HOLD_SECONDS``
(a server that is never idle still writes). Letting the writes run while the only call in flight waits on Brave was
measured and not kept: a write then delays the answer that comes back meanwhile (ten at once 5–13 % slower, a miss no
faster). Nothing waits on the writes but ``settle`` (a closing backend, so the next process finds the answer); another
process asking for the same answer meanwhile waits on the lease, which the write releases, as it did before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator

logger = logging.getLogger(__name__)

HOLD_SECONDS = 0.05  # the longest a write waits for the calls in flight (a server that is never idle still writes)
GRACE_SECONDS = 0.002  # after a reply, how long the writes leave the loop to the client's next call

Op = Callable[[], Awaitable[None]]


class Later:
    """The writes of one backend that run after the reply; each one's failure is logged, never raised."""

    def __init__(
        self,
        hold_seconds: float = HOLD_SECONDS,
        grace_seconds: float = GRACE_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._hold, self._grace, self._sleep = hold_seconds, grace_seconds, sleep
        self._ops: deque[tuple[float, Op]] = deque()  # (the latest it may start, the write), oldest first
        self._unfinished = 0
        self._writer: asyncio.Task[None] | None = None
        self._active = 0  # calls in flight
        self._quiet: asyncio.Event | None = None  # set when the last call in flight ends

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """One call in flight: deferred writes wait until none is (or ``hold_seconds``)."""
        if self._active == 0:
            self._quiet = asyncio.Event()
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1
            if self._active == 0 and self._quiet is not None:
                self._quiet.set()

    def run(self, op: Op) -> None:
        """Queue ``op``: it runs after the grace, once no call is in flight (see the module), in order."""
        loop = asyncio.get_running_loop()
        self._ops.append((loop.time() + self._hold, op))
        self._unfinished += 1
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write())

    @property
    def pending(self) -> int:
        """Writes queued and not finished."""
        return self._unfinished

    async def settle(self) -> None:
        """Wait until every write queued so far (and any queued meanwhile) has finished."""
        while self._writer is not None and not self._writer.done():
            await asyncio.wait({self._writer})

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        await self._sleep(min(self._grace, self._hold))
        while self._ops:
            latest, op = self._ops[0]
            while self._active and (left := latest - loop.time()) > 0 and self._quiet is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._quiet.wait(), left)
            self._ops.popleft()
            try:
                await op()
            except Exception:
                logger.exception("a deferred write to the shared state failed")
            finally:
                self._unfinished -= 1
            await asyncio.sleep(0)  # a call that became ready meanwhile takes the loop before the next write
