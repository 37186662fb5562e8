"""The SearXNG provider over the fake, as the provider's tests build it: one request shape, one constructor."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx2

from brave_search_mcp.providers.protocol import SearchRequest
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from testkit.clock import FakeClock

from .fake import FakeSearxng

BASE = "http://searxng.test:8080"
# The wall clock's "now" of the provider's tests: two days after the fake's first news item (so it is "2 days ago").
WALL_NOW = datetime(2025, 3, 16, 9, 30, tzinfo=UTC).timestamp()


def search_request(**overrides: Any) -> SearchRequest:
    """A web search for "hello world", 10 results, first page; any field overridden."""
    values: dict[str, Any] = {"query": "hello world", "search_type": "web", "count": 10, "offset": 0}
    values.update(overrides)
    return SearchRequest(**values)


def make_provider(
    upstream: FakeSearxng | httpx2.AsyncBaseTransport, clock: FakeClock, **config: Any
) -> SearxngProvider:
    """A provider talking to ``upstream`` (a fake, through its MockTransport, or any transport), on the fake clock
    (a hanging fake holds a request for the read timeout on it), the wall clock at ``WALL_NOW``; ``base_url``
    defaults to ``BASE``, the rest is SearxngConfig (``cache=``, ``limiter=`` and ``observer=`` pass through)."""
    cache, limiter, observer = config.pop("cache", None), config.pop("limiter", None), config.pop("observer", None)
    settings = SearxngConfig(base_url=config.pop("base_url", BASE), **config)
    transport = upstream.mock_transport(sleep=clock.sleep) if isinstance(upstream, FakeSearxng) else upstream
    return SearxngProvider(
        settings,
        transport=transport,
        clock=clock,
        sleep=clock.sleep,
        cache=cache,
        limiter=limiter,
        wall_clock=lambda: WALL_NOW,
        observer=observer,
    )
