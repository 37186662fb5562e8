"""One upstream's state shared with every other process of the user (SQLite) or every replica (Redis).

The client keeps its in-process throttle and cache (they answer in microseconds); this layer adds what
only a shared store can do: a rate limit counted across processes, so eight agents on one key stay under
the plan together, and a response cache with cross-process single flight, so eight agents asking the same
query send one request. Its limiter works on wall time; the client's deadlines are converted to it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from brave_search_mcp.clock import Clock
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS


def upstream_id(base_url: str, key: str) -> str:
    """A name for one key at one origin that says neither (Brave limits per key)."""
    return "brave:" + hashlib.sha256(f"{base_url}\n{key}".encode()).hexdigest()[:16]


def pack(status: int, body: bytes) -> bytes:
    """One stored answer: a JSON header line, then the body as received."""
    return json.dumps({"status": status}).encode() + b"\n" + body


def unpack(value: bytes) -> tuple[int, bytes]:
    """The status and body of a stored answer."""
    head, _, body = value.partition(b"\n")
    return int(json.loads(head)["status"]), body


class SharedUpstream:
    """The shared limiter and cache of one upstream key, in the client's own terms."""

    def __init__(
        self,
        backend: StateBackend,
        upstream: str,
        *,
        rate: float,
        burst: int,
        adaptive: bool,
        clock: Clock,
        wall: Clock = time.time,
    ) -> None:
        self.backend = backend
        self._id = upstream
        self.namespace = f"{upstream}:"
        self._limiter = backend.limiter(upstream, rate=rate, burst=burst)
        self._adaptive = adaptive
        self._clock = clock
        self._wall = wall

    def _wall_deadline(self, deadline: float | None) -> float | None:
        return None if deadline is None else self._wall() + (deadline - self._clock())

    async def pin(self, rate: float, burst: int) -> None:
        """An explicit rate setting wins over whatever plan the store remembers."""
        await self._limiter.update(rate, burst)

    async def acquire(self, deadline: float | None) -> None:
        """A slot in the shared window; raises ``RATE_LIMITED`` at once when none is free before the deadline."""
        await self._limiter.acquire(deadline=self._wall_deadline(deadline))

    async def observe(self, info: RateLimitInfo) -> None:
        """Share what Brave's headers said: the plan's rate, and a used-up per-second window."""
        if self._adaptive and info.per_second is not None and info.per_second > 0:
            ceiling = max(1, int(info.per_second))
            await self._limiter.update(info.per_second, ceiling)
        if info.remaining_second == 0 and info.reset_seconds is not None:
            await self._limiter.block_until(self._wall() + min(info.reset_seconds, MAX_SERVER_WAIT_SECONDS))

    async def refused(self, error: errors.BraveSearchError) -> None:
        """A 429 pauses every process's starts and lowers the shared rate."""
        if isinstance(error, errors.RateLimited) and not isinstance(error, errors.QuotaExceeded):
            pause = error.retry_after if error.retry_after is not None else 1.0
            await self._limiter.block_until(self._wall() + min(pause, MAX_SERVER_WAIT_SECONDS))
            if self._adaptive:
                await self._limiter.penalize()

    async def cached(
        self, key: str, fetch: Callable[[], Awaitable[tuple[int, bytes]]], ttl: float
    ) -> tuple[int, bytes, bool]:
        """``(status, body, hit)``: a fresh shared answer, or one fetch shared by every process asking at once."""

        async def fetch_packed() -> bytes:
            status, body = await fetch()
            return pack(status, body)

        value, hit = await self.backend.cache.get_or_fetch(f"{self._id}:{key}", fetch_packed, ttl)
        status, body = unpack(value)
        return status, body, hit

    async def snapshot(self) -> dict[str, Any]:
        """The backend's health and the shared limiter's figures, for the status tool."""
        return {**self.backend.health(), "limiter": await self._limiter.snapshot()}
