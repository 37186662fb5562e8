"""The composition root: settings in, one client, service and tool boundary out, closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2

from .client import BraveClient
from .config import Settings
from .service import SearchService
from .tools import ToolBoundary, enabled_tools

# The upstream client type a caller may hand in already open (tests, the library); transports name it
# through here so that only the composition root and the use cases import the HTTP client.
UpstreamClient = BraveClient


@asynccontextmanager
async def open_tools(
    settings: Settings,
    *,
    client: BraveClient | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> AsyncIterator[ToolBoundary]:
    """The enabled tools over one service; pass an open ``client`` (caller owns it) or a test ``transport``."""
    if client is not None:
        yield ToolBoundary(SearchService(settings, client), enabled_tools(settings))
        return
    async with BraveClient(settings, transport=transport) as owned:
        yield ToolBoundary(SearchService(settings, owned), enabled_tools(settings))
