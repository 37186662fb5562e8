"""The month's requests counted in memory while the shared store was down, added to the store once it is back.

When an outage begins, ``SharedSlots`` opens a batch per counter this process knows, holding the count it last saw
in the store (``base``) and that store's ``epoch`` (a random id a store makes once; a restarted-empty Redis or a
state file made afresh has a new one). What it books and gives back on memory meanwhile goes into the batch. When the
store answers again the batches are sent in order, each with a token the store remembers: a batch whose answer was
lost is sent again and never added twice. The store adds each batch's bookings; if its epoch is not the batch's, it
lost what it held, and it also puts back the largest base any process sent it (kept beside the count: two processes
that each saw the count at a different moment restore the later one, then both add their own bookings). So the
spending cap forgets nothing a process knew.
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
    base: int = 0  # the count this process last saw in the store before counting on memory
    epoch: str | None = None  # that store's epoch (None: never seen: nothing to put back)
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

    def start(self, counter: str, base: int, epoch: str | None, expires: float) -> None:
        """An outage begins: what ``counter`` was in the store (epoch ``epoch``) when last seen. One that begins
        while a batch is still on its way (the store failed again as it was being sent) carries that batch's base
        and epoch: the count given is memory's, which holds that batch's bookings (put back as a base on a store
        that lost its count, they were counted twice)."""
        batches = self._batches.setdefault(counter, [])
        if not batches:
            batches.append(Batch(base=base, epoch=epoch, expires=expires))
        elif batches[-1].sealed:
            last = batches[-1]
            batches.append(Batch(base=last.base, epoch=last.epoch, expires=expires))

    def add(self, counter: str, delta: int, expires: float) -> None:
        """``delta`` more (or fewer) requests counted on memory."""
        batches = self._batches.setdefault(counter, [])
        if not batches or batches[-1].sealed:
            last = batches[-1] if batches else Batch()
            batches.append(Batch(base=last.base, epoch=last.epoch))
        batch = batches[-1]
        batch.delta += delta
        batch.expires = max(batch.expires, expires)

    def adopt(self, counter: str, batch: Batch) -> None:
        """Another process's batch (``journal``), sent with this process's own; sealed: nothing is added to it."""
        if any(batch.token == b.token for b in self._batches.get(counter, ())):
            return
        batch.sealed = True
        self._batches.setdefault(counter, []).append(batch)

    def pending(self) -> list[tuple[str, Batch]]:
        """Every batch not yet added to the store, in order."""
        return [(counter, batch) for counter, batches in self._batches.items() for batch in batches]

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
                    if batch.delta != 0 or batch.base > 0:
                        batch.sealed = True  # it may reach the store now: later bookings go to a new batch
                        seen(counter, await merge(counter, batch), batch.expires)
                    batches.pop(0)
                if self._batches.get(counter) is batches and not batches:
                    del self._batches[counter]
        except StoreUnavailable:
            return
        finally:
            self._repaying = False
