"""What one Brave exchange produced, as the client hands it out and as its caches keep it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from brave_search_mcp.ratelimit.info import RateLimitInfo


@dataclass(frozen=True)
class BraveResponse:
    """A parsed successful answer and how it was obtained."""

    data: dict[str, Any]
    status: int
    cached: bool
    attempts: int  # upstream attempts made for this call (0 when served from cache)
    duration_ms: float
    request_target: tuple[str, tuple[tuple[str, str], ...]]  # (base URL + path, params) as sent
    body_bytes: int  # decoded size of the body
    rate_limit: RateLimitInfo | None
    raw_body: bytes = b""  # decoded body as received (for debug raw payload)
    # Identity of the body: every response served from the same upstream answer (cache hits, shared
    # in-flight calls) carries the same id, so callers may key their own derived values on it.
    body_id: int = 0

    @property
    def request_url(self) -> str:
        """The full URL with its query string (built only when asked: debug output); never holds the key."""
        base, params = self.request_target
        return str(httpx2.URL(base, params=list(params)))


@dataclass(frozen=True)
class Fetched:
    """What one successful upstream exchange produced (also the cached value)."""

    data: dict[str, Any]
    status: int
    attempts: int
    body_bytes: int
    raw_body: bytes
    rate_limit: RateLimitInfo | None
    body_id: int = 0
    wire: bytes | None = None  # the body as received when it came gzip-encoded (what the shared cache keeps)
