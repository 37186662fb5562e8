"""The Brave client seen through the small callables the LLM-context, local and answer use cases take.

The use cases never see HTTP; these adapters hand them the one client (its cache, throttle, retry and
deadline-aware admission) and note what the call log reports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from .brave_api import Endpoint
from .client import BraveClient
from .facts import CallFacts
from .more_common import JsonFetch, Params, StreamPost


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
