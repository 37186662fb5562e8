"""Brave as one provider of the fallback chain: the web-search use case's own Brave path behind the protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest

# (prepared Brave request, deadline) -> (parsed answer, client response); the service supplies it.
BraveFetch = Callable[[Any, float | None], Awaitable[tuple[Any, Any]]]


class BraveProvider:
    """Serves every search type; the request's ``native`` field carries the Brave params already prepared."""

    name = "brave"

    def __init__(self, fetch: BraveFetch) -> None:
        self._fetch = fetch

    def supports(self, search_type: SearchType) -> bool:
        """Brave has an index for every search type this server offers."""
        return True

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """One Brave search through the client (cache, throttle, retry) and the Brave answer parser."""
        parsed, response = await self._fetch(request.native, deadline)
        return ProviderPage(
            "brave",
            parsed.sections,
            list(parsed.warnings),
            parsed.more_available,
            response.cached,
            response.attempts,
            native=(parsed, response),
        )

    async def aclose(self) -> None:
        """The client belongs to the composition root."""
