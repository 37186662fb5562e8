"""The SearXNG provider over the fake, as the provider's tests build it: one request shape, one constructor."""

from __future__ import annotations

from typing import Any

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


def make_provider(fake: FakeSearxng, clock: FakeClock, **config: Any) -> SearxngProvider:
    """A provider talking to ``fake`` through its MockTransport, on the fake clock (``cache=`` passes through)."""
    cache = config.pop("cache", None)
    settings = SearxngConfig(base_url=config.pop("base_url", BASE), **config)
    return SearxngProvider(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep, cache=cache)
