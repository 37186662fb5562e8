"""The one door to Brave: headers, throttle, retry, cache, body cap and error mapping live here.

CONTRACT STUB — the types and signatures below are fixed; the bodies are being written.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import anyio
import httpx2

from .config import Settings


class Endpoint(StrEnum):
    """Brave API paths (relative to the base URL)."""

    WEB = "/res/v1/web/search"
    NEWS = "/res/v1/news/search"
    IMAGES = "/res/v1/images/search"
    VIDEOS = "/res/v1/videos/search"
    SUMMARIZER = "/res/v1/summarizer/search"
    LOCAL_POIS = "/res/v1/local/pois"
    LOCAL_DESCRIPTIONS = "/res/v1/local/descriptions"
    LLM_CONTEXT = "/res/v1/llm/context"


SEARCH_ENDPOINTS: dict[str, Endpoint] = {
    "web": Endpoint.WEB,
    "news": Endpoint.NEWS,
    "images": Endpoint.IMAGES,
    "videos": Endpoint.VIDEOS,
}

Params = Sequence[tuple[str, str]]
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RateLimitInfo:
    """Figures parsed from X-RateLimit-* headers of one answer (first window = per second, second = month)."""

    per_second: float | None = None
    remaining_second: int | None = None
    limit_month: int | None = None  # 0 means unlimited (pay as you go)
    remaining_month: int | None = None
    reset_seconds: float | None = None
    reset_month_seconds: float | None = None
    observed_at: float = 0.0  # client clock


@dataclass(frozen=True)
class BraveResponse:
    """A parsed successful answer and how it was obtained."""

    data: dict[str, Any]
    status: int
    cached: bool
    attempts: int  # upstream attempts made for this call (0 when served from cache)
    duration_ms: float
    request_url: str  # full URL with query string; never contains the key (it travels in a header)
    body_bytes: int  # decoded size of the body
    rate_limit: RateLimitInfo | None
    raw_body: bytes = b""  # decoded body as received (for debug raw payload)


@dataclass
class EndpointCounters:
    """Per-endpoint request/error counts since start (status tool)."""

    requests: int = 0
    errors: int = 0
    cache_hits: int = 0
    by_code: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheStats:
    """Cache figures for the status tool."""

    entries: int
    max_entries: int
    ttl_seconds: float
    hits: int
    misses: int
    shared: int  # callers served by another caller's in-flight request


class BraveClient:
    """Async Brave API client; one per process, owned by the server lifespan or ``BraveSearch``."""

    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> BraveClient:
        raise NotImplementedError

    async def __aexit__(self, *exc_info: object) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the connection pool; calls in flight end with ``Cancelled``."""
        raise NotImplementedError

    async def get(
        self,
        endpoint: Endpoint,
        params: Params,
        *,
        use_cache: bool = True,
        throttle: bool = True,
    ) -> BraveResponse:
        """GET ``endpoint`` with ``params``; raises a ``BraveSearchError`` subclass on any failure."""
        raise NotImplementedError

    @property
    def last_rate_limit(self) -> RateLimitInfo | None:
        """The most recent rate-limit figures seen on any answer (success or error)."""
        raise NotImplementedError

    def cache_stats(self) -> CacheStats:
        """Current cache figures."""
        raise NotImplementedError

    def counters(self) -> dict[str, EndpointCounters]:
        """Per-endpoint counters keyed by the endpoint's short name (web, news, images, videos, summarizer...)."""
        raise NotImplementedError

    @property
    def throttle_rate(self) -> tuple[float, int]:
        """The throttle's current (requests per second, burst)."""
        raise NotImplementedError
