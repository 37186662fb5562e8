"""The SearXNG provider: a self-hosted metasearch engine as a second source when Brave fails or is not wanted.

Speaks SearXNG's JSON API (``GET {base}/search?format=json``), translates our request (freshness →
``time_range``, safe search → ``safesearch``, page index → ``pageno``) and maps the answer through
``searxng_map``. It is polite by construction: at most ``rate`` request starts in any ``rate_window``
seconds, a User-Agent naming this tool, a 10 s timeout, and retries only for 5xx, timeouts and
connection failures. Misconfigurations are reported as such: an instance without JSON output answers
403, which becomes PROVIDER_MISCONFIGURED naming ``search.formats``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import Clock
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    InvalidArgument,
    NetworkError,
    ParseError,
    ProviderMisconfigured,
    RateLimited,
    UpstreamError,
    UpstreamTimeout,
    UpstreamValidation,
    WarningCode,
)
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.providers.searxng.results import PROVIDER_NAME, EnginesUnavailable, page_from_answer
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.ratelimit.plan import EXACT
from brave_search_mcp.state.memory import memory_limiter
from brave_search_mcp.upstream.bodies import read_capped

__all__ = ["SearxngConfig", "SearxngProvider", "build_params"]

CATEGORIES: Mapping[str, str] = {"web": "general", "news": "news", "images": "images"}
TIME_RANGES: Mapping[str, str] = {"pd": "day", "pw": "week", "pm": "month", "py": "year"}
SAFESEARCH: Mapping[str, str] = {"off": "0", "moderate": "1", "strict": "2"}
JSON_SETTING = "search.formats"
_RETRY_MIN_LEFT = 0.1  # seconds: no retry starts with less than this left before the deadline


def _default_user_agent() -> str:
    return f"brave-search-mcp/{__version__} (SearXNG provider)"


@dataclass(frozen=True)
class SearxngConfig:
    """Everything needed to talk to one SearXNG instance; built by the composition root from Settings."""

    base_url: str
    timeout: float = 10.0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)
    rate: int = 2
    rate_window: float = 1.0
    retries: int = 2
    max_response_bytes: int = 4 * 1024 * 1024
    user_agent: str = field(default_factory=_default_user_agent)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ProviderMisconfigured(
                "The SearXNG base URL must start with http:// or https:// (e.g. http://localhost:8080).",
                details={"provider": PROVIDER_NAME, "setting": "base_url"},
            )
        if self.timeout <= 0 or self.retries < 0 or self.max_response_bytes <= 0:
            raise ValueError("timeout and max_response_bytes must be positive, retries non-negative")

    @property
    def search_url(self) -> str:
        """``{base}/search``; a base with a path prefix (``https://host/searx``) keeps it."""
        return self.base_url.rstrip("/") + "/search"


def _retryable(exc: BaseException) -> bool:
    """Retry only what a later try can fix: 5xx, timeouts, connection failures (not 4xx, not empty engines)."""
    if isinstance(exc, EnginesUnavailable):
        return False  # SearXNG already waited on its engines; the chain falls back instead
    if isinstance(exc, UpstreamError):
        return exc.status >= 500
    return isinstance(exc, UpstreamTimeout | NetworkError)


def _retry_after(headers: httpx2.Headers) -> float | None:
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return value if 0 <= value < 86400 else None


def _error_text(body: bytes) -> str:
    """SearXNG's ``{"error": "…"}`` text when the body has it (wording differs by version: shown, not parsed)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ""
    message = data.get("error") if isinstance(data, dict) else None
    return message[:200] if isinstance(message, str) else ""


def _status_error(status: int, headers: httpx2.Headers, body: bytes, base_url: str) -> BraveSearchError:
    """Map a non-2xx answer by its status (never by its wording, which changes between versions)."""
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
        return ProviderMisconfigured(
            f"SearXNG refused JSON output (HTTP 403): add json to {JSON_SETTING} in the instance's settings.yml "
            "(search: {formats: [html, json]}) and restart it. On a private instance whose bot limiter is on, "
            "also set server.limiter: false.",
            details={**details, "status": 403, "setting": JSON_SETTING},
        )
    if status == 404:
        return ProviderMisconfigured(
            f"No SearXNG search endpoint at {base_url.rstrip('/')}/search (HTTP 404): check the SearXNG base URL.",
            details={**details, "status": 404, "setting": "base_url"},
        )
    if status == 429:
        return RateLimited(
            "SearXNG's limiter answered 429 (too many requests); wait, or turn server.limiter off on a private "
            "instance.",
            status=429,
            retry_after=_retry_after(headers),
            details=details,
        )
    retryable = status >= 500
    return UpstreamError(
        f"SearXNG answered HTTP {status}.{suffix}", status=status, retryable=retryable, details=details
    )


def build_params(request: SearchRequest) -> tuple[dict[str, str], list[WarningItem]]:
    """Our request → SearXNG query parameters, with a warning for anything SearXNG cannot express."""
    warnings: list[WarningItem] = []
    params = {"q": request.query, "format": "json", "categories": CATEGORIES[request.search_type]}
    params["pageno"] = str(request.offset + 1)
    country = (request.country or "").strip()
    if request.language:
        language = request.language.strip()
        if "-" not in language and len(country) == 2 and country.upper() != "ALL":
            language = f"{language}-{country.upper()}"
        params["language"] = language
    elif country and country.upper() != "ALL":
        warnings.append(
            WarningItem(
                code=WarningCode.PARAM_IGNORED,
                message="SearXNG filters by language, not country; country was not sent (give a language).",
            )
        )
    if request.safe_search:
        params["safesearch"] = SAFESEARCH[request.safe_search]
    if request.freshness:
        time_range = TIME_RANGES.get(request.freshness)
        if time_range:
            params["time_range"] = time_range
        else:
            warnings.append(
                WarningItem(
                    code=WarningCode.PARAM_IGNORED,
                    message="SearXNG has no custom date ranges; searched without a time limit (use pd, pw, pm or py).",
                )
            )
    return params, warnings


class SearxngProvider:
    """Searches one SearXNG instance; implements ``Provider`` for web, news and images."""

    name = PROVIDER_NAME

    def __init__(
        self,
        config: SearxngConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        limiter: Limiter | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._sleep = sleep
        # the composition root hands in the state backend's limiter (shared by processes, its clock); alone, the
        # provider queues in one of its own on its clock: at most ``rate`` starts per ``rate_window``, exactly
        self._limiter = limiter or memory_limiter(
            "searxng", rate=config.rate / config.rate_window, burst=config.rate, clock=clock, sleep=sleep, margin=EXACT,
            label="SearXNG",
        )  # fmt: skip
        auth = httpx2.BasicAuth(config.username, config.password or "") if config.username else None
        self._client = httpx2.AsyncClient(
            transport=transport,
            auth=auth,
            timeout=config.timeout,
            follow_redirects=True,
            max_redirects=3,
            headers={"User-Agent": config.user_agent, "Accept": "application/json", **dict(config.headers)},
        )

    def supports(self, search_type: SearchType) -> bool:
        """SearXNG serves web (``general``), news and images here; videos are left to Brave."""
        return search_type in CATEGORIES

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """Run one search against the instance; raise a BraveSearchError the chain can judge."""
        if not self.supports(request.search_type):
            raise InvalidArgument(
                f"The SearXNG provider does not serve {request.search_type} search.", field="search_type"
            )
        params, warnings = build_params(request)
        data, attempts = await self._fetch(params, deadline)
        page = page_from_answer(data, request, warnings)
        page.attempts = attempts
        return page

    # ------------------------------------------------------------------------------ transport

    async def _fetch(self, params: dict[str, str], deadline: float | None) -> tuple[dict[str, Any], int]:
        attempt = 0

        async def one_attempt() -> dict[str, Any]:
            nonlocal attempt
            attempt += 1
            await self._limiter.acquire(deadline=self._on_limiter_clock(deadline))
            return await self._attempt(params, deadline)

        def should_retry(exc: BaseException) -> bool:
            if deadline is not None and deadline - self._clock() < _RETRY_MIN_LEFT:
                return False
            return _retryable(exc)

        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=stop_after_attempt(self.config.retries + 1),
            wait=wait_exponential_jitter(multiplier=0.25, max=2.0, jitter=0.25),
            retry=retry_if_exception(should_retry),
            reraise=True,
        )
        try:
            data: dict[str, Any] = await retrying(one_attempt)
        except BraveSearchError as exc:
            exc.details.setdefault("provider", PROVIDER_NAME)
            exc.details.setdefault("attempts", attempt)
            raise
        return data, attempt

    def _on_limiter_clock(self, deadline: float | None) -> float | None:
        return None if deadline is None else self._limiter.clock() + (deadline - self._clock())

    async def _attempt(self, params: dict[str, str], deadline: float | None) -> dict[str, Any]:
        timeout = self.config.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - self._clock())
            if timeout <= 0:
                raise UpstreamTimeout("The call's deadline passed before SearXNG could be asked.")
        try:
            with anyio.fail_after(timeout):
                async with self._client.stream("GET", self.config.search_url, params=params, timeout=timeout) as resp:
                    body = await read_capped(resp, self.config.max_response_bytes, upstream="SearXNG")
                    status, headers = resp.status_code, resp.headers
        except (httpx2.TimeoutException, TimeoutError) as exc:
            raise UpstreamTimeout(f"SearXNG did not answer within {timeout:.3g} s.") from exc
        except httpx2.TransportError as exc:
            raise NetworkError(f"SearXNG could not be reached ({type(exc).__name__}).") from exc
        if not 200 <= status < 300:
            raise _status_error(status, headers, body, self.config.base_url)
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(
                "SearXNG's answer was not JSON; check that the base URL points at SearXNG itself.",
                details={"provider": PROVIDER_NAME},
            ) from exc
        if not isinstance(data, dict):
            raise ParseError("SearXNG's answer was not a JSON object.", details={"provider": PROVIDER_NAME})
        return data
