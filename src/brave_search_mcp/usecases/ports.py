"""What a use case is handed instead of HTTP: small upstream callables, and their adapters over the Brave client.

The use cases never see HTTP: the composition root hands them a ``JsonFetch`` (GET one Brave endpoint,
decoded JSON) and a ``StreamPost`` (POST, raw body chunks), both raising ``models.errors`` classes, so the
same code runs over the real client, a test transport or a recording. The adapters below hand them the one
client (its cache, throttle, retry and deadline-aware admission) and note what the call log reports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from brave_search_mcp.brave.arguments import Params
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.usecases.call import CallFacts

Progress = Callable[[float, float | None, str | None], Awaitable[None]]  # (progress, total, message)


class JsonFetch(Protocol):
    """GET one Brave endpoint and return its decoded JSON object; failures raise ``errors`` classes.

    ``headers`` carries Brave's ``X-Loc-*`` location headers; it is passed only when non-empty, so an
    adapter without header support still serves every call that has no location.
    """

    async def __call__(
        self, path: str, params: Params, *, deadline: float | None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Fetch ``path`` with ``params`` before ``deadline`` (a time on the caller's clock)."""
        ...


class StreamPost(Protocol):
    """POST a JSON body and yield the raw response body chunks as they arrive; non-2xx raises ``errors`` classes."""

    def __call__(self, path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[bytes]:
        """Start the request; iteration yields body bytes until the upstream closes the stream."""
        ...


def json_fetch(client: BraveClient, facts: CallFacts) -> JsonFetch:
    """GET through the client (cached, throttled, retried); location headers are part of the cache key."""

    async def fetch(
        path: str, params: Params, *, deadline: float | None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        extra = tuple(sorted((headers or {}).items()))
        response = await client.get(Endpoint(path), params, deadline=deadline, headers=extra)
        facts.cached = response.cached if facts.cached is None else facts.cached and response.cached
        facts.attempts += response.attempts
        facts.upstream_status = response.status
        return response.data

    return fetch


def stream_post(client: BraveClient) -> StreamPost:
    """POST and stream through the client (admitted and throttled, never cached or retried)."""

    def post(path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[bytes]:
        return client.stream_post(Endpoint(path), body, deadline=deadline)

    return post
