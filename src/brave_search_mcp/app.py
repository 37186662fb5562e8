"""The composition root: settings in, one client, service and tool boundary out, closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2

from .client import BraveClient
from .config import Settings
from .providers.base import Provider
from .providers.cached import CachedProvider
from .providers.searxng import SearxngConfig, SearxngProvider
from .service import SearchService
from .tools import ToolBoundary, enabled_tools

# The upstream client type a caller may hand in already open (tests, the library); transports name it
# through here so that only the composition root and the use cases import the HTTP client.
UpstreamClient = BraveClient


def other_providers(settings: Settings) -> dict[str, Provider]:
    """The non-Brave providers the settings name, each behind its own cache (so Brave's recovery shows at once)."""
    if "searxng" not in settings.providers or not settings.searxng_url:
        return {}
    headers = {name.strip(): value.strip() for name, _, value in (h.partition(":") for h in settings.searxng_headers)}
    password = settings.searxng_password.get_secret_value() if settings.searxng_password is not None else None
    config = SearxngConfig(settings.searxng_url, username=settings.searxng_username, password=password, headers=headers)
    provider = SearxngProvider(config)
    return {"searxng": CachedProvider(provider, max_entries=settings.cache_size, ttl=settings.cache_ttl_seconds)}


@asynccontextmanager
async def open_tools(
    settings: Settings,
    *,
    client: BraveClient | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[ToolBoundary]:
    """The enabled tools over one service; pass an open ``client`` (caller owns it) or a test ``transport``."""
    others = other_providers(settings)
    try:
        if client is not None:
            yield ToolBoundary(SearchService(settings, client, others=others), enabled_tools(settings))
            return
        async with BraveClient(settings, transport=transport) as owned:
            yield ToolBoundary(SearchService(settings, owned, others=others), enabled_tools(settings))
    finally:
        for provider in others.values():
            await provider.aclose()
