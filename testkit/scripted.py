"""A scripted MockTransport upstream for client tests that need exact control of each reply."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2

Handler = Callable[[httpx2.Request], Awaitable[httpx2.Response]]


class ScriptedUpstream:
    """Answers from a script (the last reply repeats) and records each request and when it arrived."""

    def __init__(self, *replies: httpx2.Response | Exception | Handler) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []
        self.times: list[float] = []
        self.clock: Callable[[], float] = lambda: 0.0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        self.times.append(self.clock())
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx2.Response):
            return reply
        return await reply(request)

    @property
    def count(self) -> int:
        """How many requests arrived."""
        return len(self.requests)
