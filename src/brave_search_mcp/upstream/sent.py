"""When a request has left: the moment an upstream that counts arrivals starts counting it.

A queue books a start before the request is built and written; on a busy event loop the bytes may leave tens of
milliseconds later. httpx hands each step of an exchange to a request's ``trace`` extension (httpcore's events, its
public extension API); ``Sent`` notes the end of the body's sending and awaits its callback then, before the
response is read, so a limiter can count the start from that moment and the answer's headers be dated by it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from brave_search_mcp.clock import Clock

SENT_EVENT = ".send_request_body.complete"  # "http11." or "http2." before it: the request is written out


class Sent:
    """One request's departure: ``extensions`` for httpx; ``at`` once the request is written (None before), when
    ``then`` is awaited with it, once."""

    def __init__(self, clock: Clock, then: Callable[[float], Awaitable[None]]) -> None:
        self.at: float | None = None
        self._clock = clock
        self._then = then
        self.extensions: dict[str, Any] = {"trace": self._trace}

    def at_or(self, before: float) -> float:
        """When the request left; ``before`` (when sending began) if httpx never said (a transport without traces)."""
        return before if self.at is None else self.at

    async def _trace(self, event: str, info: dict[str, Any]) -> None:
        if self.at is None and event.endswith(SENT_EVENT):
            self.at = self._clock()
            await self._then(self.at)
