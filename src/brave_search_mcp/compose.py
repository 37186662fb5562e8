"""The composition root: settings in; one state backend, Brave client, provider chain, ports and tool boundary out."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.limits import brave_limits
from brave_search_mcp.brave.shared_state import SharedUpstream, upstream_id
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.providers.cache import CachedProvider
from brave_search_mcp.providers.protocol import Provider
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.ratelimit.plan import EXACT
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.tools.boundary import ToolBoundary
from brave_search_mcp.tools.registry import enabled_tools
from brave_search_mcp.usecases.contract import Ports
from brave_search_mcp.usecases.page_memo import PageMemo
from brave_search_mcp.usecases.web_search import provider_chain

# The upstream client type a caller may hand in already open (tests, the library); transports name it
# through here so that only the composition root and the use cases import the HTTP client.
UpstreamClient = BraveClient


def other_providers(settings: Settings, state: StateBackend | None = None) -> dict[str, Provider]:
    """The non-Brave providers the settings name, each behind its own cache (so Brave's recovery shows at once);
    their requests queue in ``state``'s limiter like Brave's, each under its own upstream name."""
    if "searxng" not in settings.providers or not settings.searxng_url:
        return {}
    headers = {name.strip(): value.strip() for name, _, value in (h.partition(":") for h in settings.searxng_headers)}
    password = settings.searxng_password.get_secret_value() if settings.searxng_password is not None else None
    config = SearxngConfig(settings.searxng_url, username=settings.searxng_username, password=password, headers=headers)
    limiter = None
    if state is not None:
        name = "searxng:" + hashlib.sha256(config.base_url.encode()).hexdigest()[:16]
        rate, burst = config.rate / config.rate_window, config.rate
        limiter = state.limiter(name, rate=rate, burst=burst, margin=EXACT, label="SearXNG")
    provider = SearxngProvider(config, limiter=limiter)
    return {"searxng": CachedProvider(provider, max_entries=settings.cache_size, ttl=settings.cache_ttl_seconds)}


@asynccontextmanager
async def open_client(
    settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None
) -> AsyncIterator[BraveClient]:
    """The one Brave client: its admissions over the state backend (shared by every process of the user by default),
    and the shared cache when the backend is shared."""
    default_path = Path(settings.state_default_path) if settings.state_default_path else None
    backend = await open_state(settings.state, cache_max_entries=settings.cache_size, default_path=default_path)
    try:
        key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
        upstream = upstream_id(settings.base_url, key)
        limits = brave_limits(backend, settings, upstream=upstream, clock=time.monotonic)
        shared = SharedUpstream(backend, upstream) if backend.name != "memory" else None
        async with BraveClient(settings, transport=transport, shared=shared, limits=limits) as client:
            yield client
    finally:
        await backend.aclose()


def build_ports(
    settings: Settings,
    client: BraveClient,
    *,
    others: Mapping[str, Provider] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
) -> Ports:
    """The ports every use case runs on: one clock for the process (by default the client's, so tests fake both)."""
    clock = clock or client.clock
    ports = Ports(settings, client, clock, sleep or client.sleep, PageMemo(settings.cache_size), started_at=clock())
    ports.chain = provider_chain(ports, dict(others or {}))
    return ports


def build_tools(
    settings: Settings,
    client: BraveClient,
    *,
    others: Mapping[str, Provider] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
) -> ToolBoundary:
    """The enabled tools over one client (the caller owns the client and the other providers)."""
    ports = build_ports(settings, client, others=others, clock=clock, sleep=sleep)
    return ToolBoundary(ports, enabled_tools(settings))


@asynccontextmanager
async def open_tools(
    settings: Settings,
    *,
    client: BraveClient | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[ToolBoundary]:
    """The enabled tools over one client; pass an open ``client`` (caller owns it) or a test ``transport``."""
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(open_client(settings, transport=transport))
        others = other_providers(settings, client.limits.state)
        for provider in others.values():
            stack.push_async_callback(provider.aclose)
        yield build_tools(settings, client, others=others)
