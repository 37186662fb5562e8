"""The one in-memory MCP client over the real server, wired to a fake upstream and the fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import build_server
from testkit.clock import FakeClock


@asynccontextmanager
async def mcp_client(
    settings: Settings,
    transport: httpx2.AsyncBaseTransport | None,
    *,
    clock: FakeClock | None = None,
    mode: str | None = None,
    **client_options: Any,
) -> AsyncIterator[tuple[Client, FakeClock]]:
    """``build_server`` over one client on ``transport`` (None: real HTTP to ``settings.base_url``)."""
    clock = clock or FakeClock()
    options = dict(client_options) | ({"mode": mode} if mode is not None else {})
    async with (
        BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep) as brave,
        Client(build_server(settings, brave), **options) as client,
    ):
        yield client, clock
