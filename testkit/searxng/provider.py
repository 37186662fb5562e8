"""The SearXNG provider over the fake, as the provider's tests build it: one request shape, one constructor."""

from __future__ import annotations

from typing import Any

import httpx2

from brave_search_mcp.providers.protocol import SearchRequest
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from testkit.clock import FakeClock

from .fake import FakeSearxng

BASE = "http://searxng.test:8080"


def search_request(**overrides: Any) -> SearchRequest:
    """A web search for "hello world", 10 results, first page; any field overridden."""
    values: dict[str, Any] = {"query": "hello world", "search_type": "web", "count": 10, "offset": 0}
    values.update(overrides)
    return SearchRequest(**values)


def make_provider(
    upstream: FakeSearxng | httpx2.AsyncBaseTransport, clock: FakeClock, **config: Any
) -> SearxngProvider:
    """A provider talking to ``upstream`` (a fake, through its MockTransport, or any transport), on the fake clock;
    ``base_url`` defaults to ``BASE``, the rest is SearxngConfig (``cache=`` passes through)."""
    cache = config.pop("cache", None)
    settings = SearxngConfig(base_url=config.pop("base_url", BASE), **config)
    transport = upstream.mock_transport() if isinstance(upstream, FakeSearxng) else upstream
    return SearxngProvider(settings, transport=transport, clock=clock, sleep=clock.sleep, cache=cache)
