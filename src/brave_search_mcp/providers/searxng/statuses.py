"""What a SearXNG answer's status means, as typed errors an agent can act on (pure; matched on status, never
on wording, which differs between SearXNG versions and is translated by the request's locale).

Seen on real instances (team notes, searxng-real.md §d, §g, §h): 400 ``{"error": …}`` for a parameter it
rejects; 403 HTML when JSON output is off (``search.formats``); 429 HTML without Retry-After from the bot
limiter; a 302 off the instance for an external ``!!bang`` (even with ``format=json``); a 302 to ``/``
when a public instance's link-token limiter gave up on the client; 308 from ``/`` to ``/search``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2

from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    ParseError,
    ProviderMisconfigured,
    RateLimited,
    UpstreamError,
    UpstreamValidation,
)
from brave_search_mcp.providers.searxng.results import PROVIDER_NAME
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.upstream.bodies import decode_json_object
from brave_search_mcp.upstream.retry import RETRY_STATUSES, parse_retry_after

__all__ = ["JSON_SETTING", "probe_outcome", "redirect_error", "status_error"]

JSON_SETTING = "search.formats"
_JSON_OFF = (
    f"SearXNG refused JSON output (HTTP 403): add json to {JSON_SETTING} in the instance's settings.yml "
    "(search: {formats: [html, json]}) and restart it."
)


def _error_text(body: bytes) -> str:
    """SearXNG's ``{"error": "…"}`` text when the body has it (shown to the agent, never parsed)."""
    try:
        message = decode_json_object(body, "SearXNG").get("error")
    except ParseError:
        return ""
    return clean_text(message, limit=200) if isinstance(message, str) else ""


def redirect_error(status: int, location: str, search_url: str) -> BraveSearchError:
    """A 3xx is never followed: off the instance it would send the user's query elsewhere (an external bang)."""
    target = urljoin(search_url, location)
    here, there = urlsplit(search_url), urlsplit(target)
    details: dict[str, Any] = {"provider": PROVIDER_NAME, "status": status}
    if (there.scheme, there.netloc) != (here.scheme, here.netloc):
        return UpstreamValidation(
            f"SearXNG answered HTTP {status}, sending the search to {there.netloc or 'another site'}: the query holds "
            "an external !!bang; the redirect was not followed. Remove the !! word from the query.",
            status=status,
            details=details,
        )
    return ProviderMisconfigured(
        f"SearXNG redirected the search to {there.path or '/'} (HTTP {status}) instead of answering: its bot limiter "
        "refuses this client (on a private instance set server.limiter: false and server.public_instance: false), "
        "or the SearXNG base URL is not the instance's root.",
        details={**details, "setting": "server.limiter"},
    )


def status_error(status: int, headers: httpx2.Headers, body: bytes, base_url: str) -> BraveSearchError:
    """Map a non-2xx, non-3xx answer by its status."""
    said = _error_text(body)
    details: dict[str, Any] = {"provider": PROVIDER_NAME}
    suffix = f" SearXNG said: {said}" if said else ""
    if status == 400:
        return UpstreamValidation(f"SearXNG rejected a parameter (HTTP 400).{suffix}", status=400, details=details)
    if status == 401:
        return AuthFailed(
            "SearXNG (or a proxy in front of it) wants credentials: set the SearXNG username and password.",
            status=401,
            details=details,
        )
    if status == 403:
        return ProviderMisconfigured(_JSON_OFF, details={**details, "status": 403, "setting": JSON_SETTING})
    if status == 404:
        return ProviderMisconfigured(
            f"No SearXNG search endpoint at {base_url.rstrip('/')}/search (HTTP 404): check the SearXNG base URL.",
            details={**details, "status": 404, "setting": "base_url"},
        )
    if status == 429:
        return RateLimited(
            "SearXNG's bot limiter answered 429 (too many requests); wait, or set server.limiter: false on a private "
            "instance.",
            status=429,
            retry_after=parse_retry_after(headers.get("retry-after"), headers.get("date")),
            details=details,
        )
    return UpstreamError(
        f"SearXNG answered HTTP {status}.{suffix}", status=status, retryable=status in RETRY_STATUSES, details=details
    )


def probe_outcome(status: int, content_type: str, location: str, search_url: str) -> dict[str, Any]:
    """What the answer to ``POST /search`` with only ``format=json`` says: SearXNG answers 400 JSON "No query"
    when JSON output is on, 403 HTML when it is off; anything else is not a SearXNG API at that address."""
    if status == 400 and content_type.startswith("application/json"):
        return {"ok": True, "json_output": True}
    if status in (301, 302, 303, 307, 308):
        error = redirect_error(status, location, search_url)
    elif status == 200:
        error = ProviderMisconfigured(
            f"{search_url} answered a {content_type or 'non-JSON'} page, not SearXNG's API: check the SearXNG base "
            "URL.",
            details={"provider": PROVIDER_NAME, "setting": "base_url"},
        )
    else:
        error = status_error(status, httpx2.Headers(), b"", search_url.removesuffix("/search"))
    outcome: dict[str, Any] = {"ok": False, "code": error.code.value, "message": error.message}
    if status == 403:
        outcome["json_output"] = False
    return outcome
