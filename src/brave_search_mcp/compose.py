"""The composition root: settings in; one state backend, Brave client, provider chain, ports and tool boundary out."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.limits import brave_limits
from brave_search_mcp.brave.shared_state import SharedUpstream, upstream_id
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.observe import Observer
from brave_search_mcp.providers.protocol import Provider
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.memory import MemoryBackend
from brave_search_mcp.tools.boundary import ToolBoundary
from brave_search_mcp.tools.registry import enabled_tools
from brave_search_mcp.usecases.contract import Ports
from brave_search_mcp.usecases.page_memo import PageMemo
from brave_search_mcp.usecases.web_search import provider_chain

if TYPE_CHECKING:
    from brave_search_mcp.reader.reading import UrlReader

# The upstream client type a caller may hand in already open (tests, the library); transports name it
# through here so that only the composition root and the use cases import the HTTP client.
UpstreamClient = BraveClient


def other_providers(
    settings: Settings, state: StateBackend | None = None, observer: Observer | None = None
) -> dict[str, Provider]:
    """The non-Brave providers the settings name; SearXNG caches the instance's pages in ``state`` (shared by
    every process of the user) and queues in ``state``'s limiter like Brave, under its own upstream name."""
    if "searxng" not in settings.providers or not settings.searxng_url:
        return {}
    headers = {name.strip(): value.strip() for name, _, value in (h.partition(":") for h in settings.searxng_headers)}
    password = settings.searxng_password.get_secret_value() if settings.searxng_password is not None else None
    config = SearxngConfig(
        settings.searxng_url, username=settings.searxng_username, password=password, headers=headers,
        timeout=settings.searxng_timeout_seconds, cache_ttl=settings.cache_ttl_seconds,
        cache_size=max(1, settings.cache_size),
    )  # fmt: skip
    limiter = None
    if state is not None:
        name = "searxng:" + hashlib.sha256(config.base_url.encode()).hexdigest()[:16]
        limiter = config.queue(state.limiter, name)
    cache = state.cache if state is not None else None
    return {"searxng": SearxngProvider(config, cache=cache, limiter=limiter, observer=observer)}


@asynccontextmanager
async def open_backend(settings: Settings) -> AsyncIterator[StateBackend]:
    """The state backend the settings name (by default the user's SQLite files: state and cache), closed on exit; the
    cache writes that run beside replies belong to the task group this holds (structured: none is lost on exit)."""
    default_path = Path(settings.state_default_path) if settings.state_default_path else None
    cache_path = Path(settings.cache_default_path) if settings.cache_default_path else None
    backend = await open_state(
        settings.state,
        cache_max_entries=settings.cache_size,
        default_path=default_path,
        cache_path=cache_path,
        retry_interval=settings.state_retry_seconds,
    )
    try:
        async with backend.owned():  # the writes beside a reply run in this lifespan's task group, finished on exit
            yield backend
    finally:
        await backend.aclose()


@asynccontextmanager
async def open_client(
    settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None, backend: StateBackend | None = None
) -> AsyncIterator[BraveClient]:
    """The one Brave client: its admissions over the state backend (shared by every process of the user by default),
    and the shared cache when the backend is shared."""
    if backend is None:
        async with open_backend(settings) as opened, open_client(settings, transport=transport, backend=opened) as c:
            yield c
        return
    key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    upstream = upstream_id(settings.base_url, key)
    limits = brave_limits(backend, settings, upstream=upstream, clock=time.monotonic)
    shared = SharedUpstream(backend, upstream) if backend.name != "memory" else None
    await limits.search.look()  # before any call: a plan the fleet learns from now on is stated to this process
    async with BraveClient(settings, transport=transport, shared=shared, limits=limits) as client:
        yield client


def build_ports(
    settings: Settings,
    client: BraveClient,
    *,
    others: Mapping[str, Provider] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
    backend: StateBackend | None = None,
    observer: Observer | None = None,
) -> Ports:
    """The ports every use case runs on: one clock for the process (by default the client's, so tests fake both).

    The URL reader keeps its cache and per-host politeness in ``backend`` (shared by every process on it);
    without one (tests over a bare client) it gets per-process memory on the ports' clock.
    """
    now, pause = clock or client.clock, sleep or client.sleep
    observer = observer or Observer()

    def open_reader() -> UrlReader:
        from brave_search_mcp.reader.browser import Renderer  # Playwright itself loads when a browser launches
        from brave_search_mcp.reader.observed import ObservedReader  # its fetching stack loads on the first read only

        renderer = Renderer(settings.read_browser)  # its browser is launched on the first app shell
        if backend is None:
            own = MemoryBackend(clock=now, sleep=pause, cache_max_entries=settings.cache_size)
            return ObservedReader(settings, own, clock=now, sleep=pause, renderer=renderer, observer=observer)
        # open_state's backends keep wall time: they are shared by processes whose monotonic clocks differ
        return ObservedReader(settings, backend, clock=time.time, renderer=renderer, observer=observer)

    ports = Ports(settings, client, now, pause, PageMemo(settings.cache_size), open_reader, started_at=now())
    ports.chain = provider_chain(ports, dict(others or {}))
    ports.observer = client.observer = observer  # one per process: the boundary, the client and the reader report
    observer.watch(ports)
    return ports


def build_tools(
    settings: Settings,
    client: BraveClient,
    *,
    others: Mapping[str, Provider] | None = None,
    clock: Clock | None = None,
    sleep: Sleep | None = None,
    backend: StateBackend | None = None,
    observer: Observer | None = None,
) -> ToolBoundary:
    """The enabled tools over one client (the caller owns the client, the other providers and the backend)."""
    ports = build_ports(settings, client, others=others, clock=clock, sleep=sleep, backend=backend, observer=observer)
    return ToolBoundary(ports, enabled_tools(settings))


@asynccontextmanager
async def open_tools(
    settings: Settings,
    *,
    client: BraveClient | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    observer: Observer | None = None,
) -> AsyncIterator[ToolBoundary]:
    """The enabled tools over one client; pass an open ``client`` (caller owns it) or a test ``transport``;
    ``observer`` (the face's, one per process) counts and traces what they do."""
    if client is not None:
        async with open_others(settings, client.limits.state, observer) as others:
            tools = build_tools(settings, client, others=others, observer=observer)
            try:
                yield tools
            finally:
                await tools.ports.aclose()
        return
    async with (
        open_backend(settings) as backend,
        open_client(settings, transport=transport, backend=backend) as owned,
        open_others(settings, backend, observer) as others,
    ):
        tools = build_tools(settings, owned, others=others, backend=backend, observer=observer)
        try:
            yield tools
        finally:
            await tools.ports.aclose()  # the browser, if a read launched one


@asynccontextmanager
async def open_others(
    settings: Settings, state: StateBackend | None, observer: Observer | None = None
) -> AsyncIterator[dict[str, Provider]]:
    """The other providers on ``state`` (cache and limiter shared by every process on it), closed at the end."""
    others = other_providers(settings, state, observer)
    try:
        yield others
    finally:
        for provider in others.values():
            await provider.aclose()
