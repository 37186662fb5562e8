"""The composition root: settings in, one client, service and tool boundary out, closed together."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.shared_state import SharedUpstream, upstream_id
from brave_search_mcp.config import Settings
from brave_search_mcp.providers.protocol import Provider
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.tools.boundary import ToolBoundary
from brave_search_mcp.tools.registry import enabled_tools
from brave_search_mcp.usecases.service import SearchService

# The upstream client type a caller may hand in already open (tests, the library); transports name it
# through here so that only the composition root and the use cases import the HTTP client.
UpstreamClient = BraveClient


def other_providers(settings: Settings, state: StateBackend | None = None) -> dict[str, Provider]:
    """The non-Brave providers the settings name; SearXNG caches the instance's pages in ``state`` (shared by
    every process of the user) when given, else in this process."""
    if "searxng" not in settings.providers or not settings.searxng_url:
        return {}
    headers = {name.strip(): value.strip() for name, _, value in (h.partition(":") for h in settings.searxng_headers)}
    password = settings.searxng_password.get_secret_value() if settings.searxng_password is not None else None
    config = SearxngConfig(
        settings.searxng_url, username=settings.searxng_username, password=password, headers=headers,
        cache_ttl=settings.cache_ttl_seconds, cache_size=max(1, settings.cache_size),
    )  # fmt: skip
    return {"searxng": SearxngProvider(config, cache=state.cache if state is not None else None)}


@asynccontextmanager
async def open_client(
    settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None
) -> AsyncIterator[BraveClient]:
    """The one Brave client, with the shared limiter and cache when the state backend is shared (the default)."""
    default_path = Path(settings.state_default_path) if settings.state_default_path else None
    backend = await open_state(settings.state, cache_max_entries=settings.cache_size, default_path=default_path)
    try:
        shared: SharedUpstream | None = None
        if backend.name != "memory":
            key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
            rate, burst = settings.rate_limit or 1.0, settings.burst or 1
            shared = SharedUpstream(
                backend, upstream_id(settings.base_url, key), rate=rate, burst=burst,
                adaptive=settings.adaptive_rate, clock=time.monotonic,
            )  # fmt: skip
            if not settings.adaptive_rate:
                await shared.pin(rate, burst)
        async with BraveClient(settings, transport=transport, shared=shared) as client:
            yield client
    finally:
        await backend.aclose()


@asynccontextmanager
async def open_tools(
    settings: Settings,
    *,
    client: BraveClient | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[ToolBoundary]:
    """The enabled tools over one service; pass an open ``client`` (caller owns it) or a test ``transport``."""
    if client is not None:
        async with _with_others(settings, client) as others:
            yield ToolBoundary(SearchService(settings, client, others=others), enabled_tools(settings))
        return
    async with open_client(settings, transport=transport) as owned, _with_others(settings, owned) as others:
        yield ToolBoundary(SearchService(settings, owned, others=others), enabled_tools(settings))


@asynccontextmanager
async def _with_others(settings: Settings, client: BraveClient) -> AsyncIterator[dict[str, Provider]]:
    """The other providers on the client's state backend, closed when the block ends."""
    others = other_providers(settings, client.shared.backend if client.shared else None)
    try:
        yield others
    finally:
        for provider in others.values():
            await provider.aclose()
