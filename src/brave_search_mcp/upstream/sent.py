"""When a request has left: the moment an upstream that counts arrivals starts counting it.

A queue books a start before the request is built and written; on a busy event loop the bytes may leave tens of
milliseconds later. httpx hands each step of an exchange to a request's ``trace`` extension (httpcore's events, its
public extension API); ``on_sent`` turns the end of the body's sending into one call, awaited before the response is
read, so a limiter can count the start from then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

SENT_EVENT = ".send_request_body.complete"  # "http11." or "http2." before it: the request is written out


def on_sent(callback: Callable[[], Awaitable[None]]) -> dict[str, Any]:
    """A request's extensions that await ``callback`` once, as soon as the request has been written out."""
    done = False

    async def trace(event: str, info: dict[str, Any]) -> None:
        nonlocal done
        if not done and event.endswith(SENT_EVENT):
            done = True
            await callback()

    return {"trace": trace}
