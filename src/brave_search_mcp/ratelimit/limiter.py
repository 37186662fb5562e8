"""The limiter every upstream's requests pass, as a protocol the state backends implement, and its fail-fast refusal."""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

from brave_search_mcp.models import errors


class SlotUnavailable(errors.RefusedBeforeSending):
    """The limiter cannot start this call before its deadline: fail now with the wait instead of sitting on it."""

    def __init__(self, retry_after: float, upstream: str) -> None:
        wait = max(0.0, retry_after)
        super().__init__(
            f"The {upstream} rate limit is fully booked until after this call's deadline; retry in {wait:.2f} s.",
            status=429,
            brave_code="RATE_LIMITED",
            retry_after=round(wait, 3),
        )
        self.details["retry_after_ms"] = max(1, math.ceil(wait * 1000))
        self.retry_after = wait


@runtime_checkable
class Limiter(Protocol):
    """Rate limiter of one upstream ("brave", "searxng"), shared by every process on the backend."""

    async def acquire(self, *, deadline: float | None = None) -> float:
        """Wait for a start slot and return the seconds waited; SlotUnavailable at once if none before deadline."""
        ...

    async def update(self, rate: float, burst: int) -> None:
        """The plan as learned from Brave's headers: a higher one is reached by slow start (doubling per second)."""
        ...

    async def penalize(self) -> None:
        """A 429 that contradicts the plan: halve the rate in force (recovers 10 % per clean minute)."""
        ...

    async def block_until(self, t: float) -> None:
        """No start before clock time ``t`` in any process."""
        ...

    async def snapshot(self) -> dict[str, Any]:
        """Rate in force, learned plan, pause and backend name, for the status tool."""
        ...
