"""A provider's answers cached under the provider's own name, so a fallback answer never hides Brave's recovery."""

from __future__ import annotations

import time
from dataclasses import replace

from brave_search_mcp.clock import Clock
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.protocol import Provider, ProviderPage, SearchRequest
from brave_search_mcp.state.response_cache import ResponseCache, make_key


class CachedProvider:
    """Wraps a provider with a TTL+LRU cache keyed by provider, search type and the normalised request."""

    def __init__(self, inner: Provider, *, max_entries: int, ttl: float, clock: Clock = time.monotonic) -> None:
        self.name = inner.name
        self._inner = inner
        self._cache: ResponseCache[ProviderPage] = ResponseCache(max_entries, ttl, clock=clock)

    def supports(self, search_type: SearchType) -> bool:
        """As the wrapped provider."""
        return self._inner.supports(search_type)

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """A cached page when one is fresh; identical concurrent requests share one upstream call."""
        fields = [
            ("q", request.query),
            ("count", str(request.count)),
            ("offset", str(request.offset)),
            ("country", request.country or ""),
            ("language", request.language or ""),
            ("safe_search", request.safe_search or ""),
            ("freshness", request.freshness or ""),
        ]
        key = make_key(f"{self.name}:{request.search_type}", fields)
        page, hit, _ = await self._cache.get_or_fetch(key, lambda: self._inner.search(request, deadline=deadline))
        return replace(page, cached=True, attempts=0) if hit else page

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self._inner.aclose()
