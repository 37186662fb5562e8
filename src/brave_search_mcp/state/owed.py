"""The month's requests counted in memory while the shared store was down, added to the store once it is back.

Each process keeps, per counter, batches of what it booked (and gave back) on memory during an outage, the first
starting from the count it last saw in the store (a floor: ``SharedSlots`` queues one per counter it knows when an
outage begins). When the
store answers again the batches are sent in order, each with a token the store remembers: a batch whose answer was
lost is sent again and never added twice. A store that lost its counts meanwhile (a Redis restarted without
persistence) is raised to at least what this process counted on memory (the last count it saw in the store plus
its own bookings since), so the spending cap never forgets what a process knew.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from brave_search_mcp.state.base import StoreUnavailable


@dataclass
class Batch:
    """Bookings made on memory, sent to the store as one addition."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    delta: int = 0  # requests booked minus those given back
    floor: int = 0  # this process's count on memory after them: the store's count is raised to at least this
    expires: float = 0.0
    sealed: bool = False  # being sent (or sent once): later bookings go to a new batch


Merge = Callable[[str, Batch], Awaitable[int]]


class OwedCounts:
    """Per counter, the batches not yet added to the store."""

    def __init__(self) -> None:
        self._batches: dict[str, list[Batch]] = {}
        self._repaying = False

    def __bool__(self) -> bool:
        return bool(self._batches)

    def add(self, counter: str, delta: int, count: int, expires: float) -> None:
        """``delta`` more (or fewer) requests counted on memory, where the count is now ``count``."""
        batches = self._batches.setdefault(counter, [])
        if not batches or batches[-1].sealed:
            batches.append(Batch())
        batch = batches[-1]
        batch.delta += delta
        batch.floor = count
        batch.expires = max(batch.expires, expires)

    def owed(self, counter: str) -> int:
        """Requests counted on memory and not yet in the store."""
        return sum(batch.delta for batch in self._batches.get(counter, ()))

    async def repay(self, merge: Merge, seen: Callable[[str, int, float], None]) -> None:
        """Send every batch in order (``merge`` returns the store's count after it, ``seen`` is told); the store
        failing again (StoreUnavailable) keeps the rest, and the batch under way, for the next time."""
        if self._repaying:
            return
        self._repaying = True
        try:
            for counter in list(self._batches):
                batches = self._batches[counter]
                while batches:
                    batch = batches[0]
                    if batch.delta != 0 or batch.floor > 0:
                        batch.sealed = True  # it may reach the store now: later bookings go to a new batch
                        seen(counter, await merge(counter, batch), batch.expires)
                    batches.pop(0)
                if self._batches.get(counter) is batches and not batches:
                    del self._batches[counter]
        except StoreUnavailable:
            return
        finally:
            self._repaying = False
