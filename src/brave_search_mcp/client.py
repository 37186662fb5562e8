"""The one door to Brave: headers, throttle, retry, cache, body cap and error mapping live here.

Every request carries the key in a header only (never in the URL, a message or a log line).
A call first looks in the cache; otherwise one upstream fetch is shared by identical concurrent
calls, and each attempt of that fetch takes a throttle slot, is bounded by the per-attempt
timeout (body included) and by the byte cap, and is retried only when a later try can succeed
(DESIGN.md, "Resilience rules"). Brave's error JSON becomes a typed ``BraveSearchError``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any

import anyio
import httpx2
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from . import errors
from ._version import __version__
from .cache import ResponseCache, make_key
from .config import Settings
from .throttle import Throttle

logger = logging.getLogger(__name__)


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
    # Values derived from this body (e.g. parsed sections), shared by every response served from the same
    # cache entry, so a cache hit does not redo the work. ``data`` and memoized values are read-only.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


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


ENDPOINT_NAMES: dict[Endpoint, str] = {
    Endpoint.WEB: "web",
    Endpoint.NEWS: "news",
    Endpoint.IMAGES: "images",
    Endpoint.VIDEOS: "videos",
    Endpoint.SUMMARIZER: "summarizer",
    Endpoint.LOCAL_POIS: "local_pois",
    Endpoint.LOCAL_DESCRIPTIONS: "local_descriptions",
    Endpoint.LLM_CONTEXT: "llm_context",
}

USER_AGENT = f"brave-search-mcp/{__version__} (+https://github.com/brave-search-mcp)"
# A server-demanded wait longer than this is not worth holding a tool call for: give up at once.
MAX_SERVER_WAIT_SECONDS = 60.0
# Error bodies are only read this far (they are small; anything longer is not Brave's error JSON).
ERROR_BODY_CAP_BYTES = 64 * 1024
MESSAGE_CAP_CHARS = 300
DETAIL_VALUE_CAP_CHARS = 200
MAX_VALIDATION_ERRORS = 5
RETRY_STATUSES: frozenset[int] = frozenset({500, 502, 503, 504})
AUTH_CODES: frozenset[str] = frozenset({"SUBSCRIPTION_TOKEN_INVALID", "SUBSCRIPTION_NOT_FOUND"})
PLAN_CODES: frozenset[str] = frozenset({"OPTION_NOT_IN_PLAN", "RESOURCE_NOT_ALLOWED"})
META_DETAIL_FIELDS: tuple[str, ...] = ("plan", "rate_limit", "quota_limit", "quota_current", "component")
# Which Brave plan includes an endpoint, for NOT_IN_PLAN messages (reference/brave-api.md §1).
PLAN_NEEDED: dict[Endpoint, str] = {
    Endpoint.SUMMARIZER: "Pro AI (the legacy summarizer plan)",
    Endpoint.LLM_CONTEXT: "Search",
    Endpoint.LOCAL_POIS: "Search",
    Endpoint.LOCAL_DESCRIPTIONS: "Search",
}
_BRAVE_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
MISSING_KEY_MESSAGE = (
    "No Brave Search API key is configured: set BRAVE_SEARCH_API_KEY (or BRAVE_API_KEY, "
    "or BRAVE_API_KEY_FILE naming a file that holds the key)."
)


def clean_text(text: str, limit: int = MESSAGE_CAP_CHARS) -> str:
    """Make upstream text safe to show: control characters dropped, whitespace collapsed, length capped."""
    kept = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    collapsed = " ".join(kept.split())
    if len(collapsed) > limit:
        return collapsed[: max(0, limit - 1)].rstrip() + "…"
    return collapsed


def _numbers(raw: str | None) -> list[float | None]:
    """Split a comma list of numbers; unreadable entries become None."""
    if raw is None:
        return []
    values: list[float | None] = []
    for part in raw.split(","):
        try:
            number = float(part.strip())
        except ValueError:
            values.append(None)
            continue
        values.append(number if math.isfinite(number) and number >= 0 else None)
    return values


def _policy(raw: str | None) -> list[tuple[float | None, float | None]]:
    """Parse ``X-RateLimit-Policy`` (``1;w=1, 15000;w=2592000``) into (limit, window seconds) pairs."""
    if raw is None:
        return []
    entries: list[tuple[float | None, float | None]] = []
    for part in raw.split(","):
        pieces = [piece.strip() for piece in part.split(";")]
        limit = _numbers(pieces[0])[0] if pieces[0] else None
        window: float | None = None
        for piece in pieces[1:]:
            name, _, value = piece.partition("=")
            if name.strip().lower() == "w":
                window = _numbers(value)[0]
        entries.append((limit, window))
    return entries


def _at(values: Sequence[float | None], index: int | None) -> float | None:
    if index is None or not 0 <= index < len(values):
        return None
    return values[index]


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def parse_rate_limit(headers: Mapping[str, str], now: float) -> RateLimitInfo | None:
    """Read Brave's X-RateLimit-* headers (first window per second, second per month); None when absent."""
    limits = _numbers(headers.get("x-ratelimit-limit"))
    policy = _policy(headers.get("x-ratelimit-policy"))
    remaining = _numbers(headers.get("x-ratelimit-remaining"))
    resets = _numbers(headers.get("x-ratelimit-reset"))
    if not (limits or policy or remaining or resets):
        return None
    second_index: int | None = 0
    month_index: int | None = 1
    per_second: float | None
    if policy:
        windows = [window for _, window in policy]
        second_index = windows.index(1.0) if 1.0 in windows else None
        month_index = next(
            (i for i, window in enumerate(windows) if i != second_index and window is not None and window > 1), None
        )
        per_second = policy[second_index][0] if second_index is not None else None
        if per_second is None and second_index is not None:
            per_second = _at(limits, second_index)
        limit_month = policy[month_index][0] if month_index is not None else None
        if limit_month is None:
            limit_month = _at(limits, month_index)
    else:
        per_second = _at(limits, 0)
        limit_month = _at(limits, 1)
    return RateLimitInfo(
        per_second=per_second,
        remaining_second=_int(_at(remaining, second_index)),
        limit_month=_int(limit_month),
        remaining_month=_int(_at(remaining, month_index)),
        reset_seconds=_at(resets, second_index),
        reset_month_seconds=_at(resets, month_index),
        observed_at=now,
    )


def parse_retry_after(value: str | None, date_header: str | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (seconds or HTTP-date, measured against ``Date`` if sent)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    when = _http_date(text)
    if when is None:
        return None
    reference = _http_date(date_header) if date_header else None
    if reference is None:
        reference = datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


def _http_date(text: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _brave_error(body: bytes) -> dict[str, Any] | None:
    """Brave's error object from an error body (``error`` or the doc-example ``errors`` list), if any."""
    if not body.strip():
        return None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    error = document.get("error")
    if isinstance(error, dict):
        return error
    listed = document.get("errors")
    if isinstance(listed, list) and listed and isinstance(listed[0], dict):
        return listed[0]
    return None


def decode_json_object(body: bytes) -> dict[str, Any]:
    """Parse a success body; anything but a JSON object is a ``ParseError``."""
    if not body.strip():
        raise errors.ParseError("Brave answered with an empty body.", details={"body_bytes": len(body)})
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise errors.ParseError(
            "Brave's answer was not valid JSON (perhaps a proxy page or a cut-off body).",
            details={"body_bytes": len(body)},
        ) from None
    if not isinstance(document, dict):
        raise errors.ParseError(
            f"Brave's answer was JSON but not an object (got {type(document).__name__}).",
            details={"body_bytes": len(body)},
        )
    return document


@dataclass(frozen=True)
class _Fetched:
    """What one successful upstream exchange produced (also the cached value)."""

    data: dict[str, Any]
    status: int
    attempts: int
    body_bytes: int
    raw_body: bytes
    rate_limit: RateLimitInfo | None
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


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
        self._settings = settings
        self._transport = transport
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._http: httpx2.AsyncClient | None = None
        self._closed = False
        self._calls: set[anyio.CancelScope] = set()
        self._throttle = Throttle(settings.rate_limit or 1.0, settings.burst or 1, clock=clock, sleep=sleep)
        self._cache: ResponseCache[_Fetched] = ResponseCache(
            settings.cache_size, settings.cache_ttl_seconds, clock=clock
        )
        self._counters: dict[str, EndpointCounters] = {name: EndpointCounters() for name in ENDPOINT_NAMES.values()}
        self._last_rate_limit: RateLimitInfo | None = None
        self._key_echoes = 0

    async def __aenter__(self) -> BraveClient:
        if self._closed:
            raise errors.Cancelled("The Brave client is closed; create a new one.")
        self._open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; calls in flight end with ``Cancelled``."""
        self._closed = True
        for scope in list(self._calls):
            scope.cancel()
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    async def get(
        self,
        endpoint: Endpoint,
        params: Params,
        *,
        use_cache: bool = True,
        throttle: bool = True,
        retries: int | None = None,
        deadline: float | None = None,
    ) -> BraveResponse:
        """GET ``endpoint`` with ``params``; raises a ``BraveSearchError`` subclass on any failure.

        ``retries`` overrides the configured retry count for this call; ``deadline`` (a time on this
        client's clock) makes a wait Brave demands that cannot end before it fail at once as
        ``RATE_LIMITED`` with ``retry_after_seconds``, instead of holding the call until it times out.
        """
        endpoint = Endpoint(endpoint)
        counters = self._counters[ENDPOINT_NAMES[endpoint]]
        try:
            if self._closed:
                raise errors.Cancelled("The Brave client is closed.")
            scope = anyio.CancelScope()
            self._calls.add(scope)
            try:
                with scope:
                    return await self._get(
                        endpoint,
                        list(params),
                        use_cache=use_cache,
                        throttle=throttle,
                        retries=retries,
                        deadline=deadline,
                    )
            finally:
                self._calls.discard(scope)
            raise errors.Cancelled("The Brave client was closed while the call was in flight.")
        except errors.BraveSearchError as exc:
            counters.errors += 1
            counters.by_code[exc.code.value] = counters.by_code.get(exc.code.value, 0) + 1
            raise

    @property
    def last_rate_limit(self) -> RateLimitInfo | None:
        """The most recent rate-limit figures seen on any answer (success or error)."""
        return self._last_rate_limit

    def cache_stats(self) -> CacheStats:
        """Current cache figures."""
        cache = self._cache
        return CacheStats(
            entries=cache.entries,
            max_entries=cache.max_entries,
            ttl_seconds=cache.ttl,
            hits=cache.hits,
            misses=cache.misses,
            shared=cache.shared,
        )

    def counters(self) -> dict[str, EndpointCounters]:
        """Per-endpoint counters keyed by the endpoint's short name (web, news, images, videos, summarizer...)."""
        return {
            name: EndpointCounters(c.requests, c.errors, c.cache_hits, dict(c.by_code))
            for name, c in self._counters.items()
        }

    @property
    def key_echoes(self) -> int:
        """How many successful bodies contained the API key (the service then scrubs its output)."""
        return self._key_echoes

    @property
    def clock(self) -> Clock:
        """The clock this client stamps and throttles with (shared by the service for deadlines)."""
        return self._clock

    @property
    def sleep(self) -> Sleep:
        """The sleep this client waits with (shared by the service for summarizer polling)."""
        return self._sleep

    @property
    def throttle_rate(self) -> tuple[float, int]:
        """The throttle's current (requests per second, burst)."""
        return self._throttle.rate, self._throttle.burst

    # -- one call -------------------------------------------------------------------------------

    def _open(self) -> httpx2.AsyncClient:
        if self._http is None:
            self._http = httpx2.AsyncClient(
                base_url=self._settings.base_url,
                transport=self._transport,
                timeout=self._settings.timeout_seconds,
                follow_redirects=False,
            )
        return self._http

    def _key(self) -> str:
        secret = self._settings.api_key
        return secret.get_secret_value() if secret is not None else ""

    def _safe(self, text: str, limit: int = MESSAGE_CAP_CHARS) -> str:
        """Upstream or library text made fit for a message; the key can never slip through."""
        key = self._key()
        if key:
            text = text.replace(key, "[redacted]")
        return clean_text(text, limit)

    def _url(self, endpoint: Endpoint, params: Params) -> httpx2.URL:
        try:
            return httpx2.URL(self._settings.base_url.rstrip("/") + endpoint.value, params=list(params))
        except (httpx2.InvalidURL, TypeError, ValueError) as exc:
            raise errors.InvalidArgument(
                f"The request could not be encoded as a URL ({self._safe(str(exc), 120)})."
            ) from None

    async def _get(
        self,
        endpoint: Endpoint,
        params: list[tuple[str, str]],
        *,
        use_cache: bool,
        throttle: bool,
        retries: int | None,
        deadline: float | None,
    ) -> BraveResponse:
        if not self._settings.has_key:
            raise errors.MissingApiKey(MISSING_KEY_MESSAGE)
        name = ENDPOINT_NAMES[endpoint]
        started = self._clock()
        url_key = ("request_url", tuple(params))

        async def fetch() -> _Fetched:
            url = self._url(endpoint, params)
            fetched = await self._fetch(endpoint, url, throttle=throttle, retries=retries, deadline=deadline)
            fetched.memo[url_key] = str(url)
            return fetched

        fetched, hit, _shared = await self._cache.get_or_fetch(
            make_key(endpoint.value, params), fetch, bypass=not use_cache
        )
        duration_ms = max(0.0, (self._clock() - started) * 1000.0)
        if hit:
            self._counters[name].cache_hits += 1
        request_url: str | None = fetched.memo.get(url_key)
        if request_url is None:  # a hit spelled differently from the request that filled the entry
            request_url = fetched.memo[url_key] = str(self._url(endpoint, params))
        # Hits and shared answers hand out the same decoded body and memo: both are read-only by contract.
        return BraveResponse(
            data=fetched.data,
            status=fetched.status,
            cached=hit,
            attempts=0 if hit else fetched.attempts,
            duration_ms=duration_ms,
            request_url=request_url,
            body_bytes=fetched.body_bytes,
            rate_limit=(self._last_rate_limit or fetched.rate_limit) if hit else fetched.rate_limit,
            raw_body=fetched.raw_body,
            memo=fetched.memo,
        )

    async def _fetch(
        self, endpoint: Endpoint, url: httpx2.URL, *, throttle: bool, retries: int | None, deadline: float | None
    ) -> _Fetched:
        counters = self._counters[ENDPOINT_NAMES[endpoint]]
        attempt = 0

        async def one_attempt() -> _Fetched:
            nonlocal attempt
            if throttle:
                self._check_pause(deadline)  # before counting: no request goes out
            attempt += 1
            if throttle:
                await self._throttle.acquire()
            counters.requests += 1
            return await self._attempt(endpoint, url, attempt)

        def should_retry(exc: BaseException) -> bool:
            return self._should_retry(exc, deadline)

        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=stop_after_attempt((self._settings.retries if retries is None else retries) + 1),
            wait=self._retry_wait,
            retry=retry_if_exception(should_retry),
            reraise=True,
        )
        try:
            fetched: _Fetched = await retrying(one_attempt)
        except errors.BraveSearchError as exc:
            exc.details.setdefault("attempts", attempt)
            raise
        return replace(fetched, attempts=attempt)

    # -- retry policy ---------------------------------------------------------------------------

    @staticmethod
    def _server_wait(exc: BaseException | None) -> float | None:
        if isinstance(exc, errors.UpstreamStatusError):
            return exc.retry_after
        return None

    def _check_pause(self, deadline: float | None) -> None:
        """Fail fast when Brave's demanded pause (after a 429 or an exhausted window) outlasts the call."""
        if deadline is None:
            return
        now = self._clock()
        pause = self._throttle.blocked_until - now
        if pause > 0 and now + pause > deadline:
            raise errors.RateLimited(
                f"Brave asked this key to pause for {pause:.1f} s, longer than this call may wait; retry after that.",
                status=429,
                brave_code="RATE_LIMITED",
                retry_after=round(pause, 3),
            )

    def _should_retry(self, exc: BaseException, deadline: float | None = None) -> bool:
        """Retry only what a later try can fix, and only if Brave does not ask for an unreasonable wait."""
        if isinstance(exc, errors.RateLimited):
            retry = True
        elif isinstance(exc, errors.UpstreamError):
            retry = exc.status in RETRY_STATUSES
        elif isinstance(exc, errors.UpstreamTimeout | errors.NetworkError):
            retry = exc.retryable
        else:
            return False
        wait = self._server_wait(exc)
        limit = MAX_SERVER_WAIT_SECONDS if deadline is None else min(MAX_SERVER_WAIT_SECONDS, deadline - self._clock())
        return retry and (wait is None or wait <= limit)

    def _retry_wait(self, state: RetryCallState) -> float:
        """Retry-After / X-RateLimit-Reset when Brave gave one, else capped exponential backoff with jitter."""
        outcome = state.outcome
        server = self._server_wait(outcome.exception() if outcome is not None else None)
        if server is not None:
            return server
        exponent = min(max(state.attempt_number - 1, 0), 30)
        delay = self._settings.retry_base_ms / 1000.0 * (2.0**exponent)
        jitter = 0.8 + 0.4 * self._rng()
        return min(self._settings.retry_max_ms / 1000.0, delay * jitter)

    # -- one attempt ----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {
            "X-Subscription-Token": self._key(),
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            "User-Agent": USER_AGENT,
        }

    async def _attempt(self, endpoint: Endpoint, url: httpx2.URL, attempt: int) -> _Fetched:
        if self._closed:
            raise errors.Cancelled("The Brave client is closed.")
        http = self._open()
        timeout = self._settings.timeout_seconds
        started = self._clock()
        status: int | None = None
        outcome = "ok"
        try:
            try:
                with anyio.fail_after(timeout):
                    request = http.build_request("GET", url, headers=self._headers())
                    response = await http.send(request, stream=True)
                    try:
                        status = response.status_code
                        return await self._handle(endpoint, response)
                    finally:
                        await response.aclose()
            except TimeoutError:
                raise self._timeout(timeout) from None
            except httpx2.TimeoutException:
                raise self._timeout(timeout) from None
            except httpx2.DecodingError as exc:
                raise errors.ParseError(
                    f"Brave's answer could not be decompressed ({self._safe(str(exc), 120)}).",
                    details={"status": status} if status is not None else None,
                ) from None
            except (httpx2.UnsupportedProtocol, httpx2.LocalProtocolError) as exc:
                raise self._network(exc, retryable=False) from None
            except httpx2.HTTPError as exc:
                raise self._network(exc, retryable=True) from None
            except httpx2.StreamError as exc:
                raise self._network(exc, retryable=False) from None
        except errors.BraveSearchError as exc:
            outcome = exc.code.value
            raise
        finally:
            logger.debug(
                "brave request endpoint=%s attempt=%d status=%s outcome=%s duration_ms=%.1f",
                ENDPOINT_NAMES[endpoint],
                attempt,
                status if status is not None else "-",
                outcome,
                (self._clock() - started) * 1000.0,
            )

    def _timeout(self, timeout: float) -> errors.UpstreamTimeout:
        return errors.UpstreamTimeout(
            f"Brave did not answer within {timeout:g} s.", details={"timeout_seconds": timeout}
        )

    def _network(self, exc: Exception, *, retryable: bool) -> errors.NetworkError:
        reason = self._safe(str(exc), 160)
        text = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
        return errors.NetworkError(
            f"Could not reach Brave ({text}).", retryable=retryable, details={"reason": type(exc).__name__}
        )

    async def _handle(self, endpoint: Endpoint, response: httpx2.Response) -> _Fetched:
        status = response.status_code
        info = parse_rate_limit(response.headers, self._clock())
        if info is not None:
            self._observe(info)
        if 200 <= status < 300:
            body = await self._read_capped(response)
            key = self._key()
            if key and key.encode() in body:  # e.g. an agent put the key in its query and Brave echoed it
                self._key_echoes += 1
            return _Fetched(
                data=decode_json_object(body),
                status=status,
                attempts=1,
                body_bytes=len(body),
                raw_body=body,
                rate_limit=info,
            )
        body = await self._read_error_body(response)
        error = self._map_error(endpoint, response, body, info)
        if isinstance(error, errors.RateLimited):
            pause = error.retry_after if error.retry_after is not None else 1.0
            self._throttle.block_until(self._clock() + min(pause, MAX_SERVER_WAIT_SECONDS))
        raise error

    def _observe(self, info: RateLimitInfo) -> None:
        """Remember the figures, follow the plan's per-second limit, and respect an exhausted window."""
        self._last_rate_limit = info
        per_second = info.per_second
        if self._settings.adaptive_rate and per_second is not None and per_second > 0:
            ceiling = max(1, int(per_second))
            burst = min(self._settings.burst or ceiling, ceiling)
            self._throttle.update(per_second, burst)
        if info.remaining_second == 0 and info.reset_seconds is not None:
            self._throttle.block_until(info.observed_at + min(info.reset_seconds, MAX_SERVER_WAIT_SECONDS))

    async def _read_capped(self, response: httpx2.Response) -> bytes:
        """Read a success body, refusing it as soon as it is known to exceed the cap."""
        cap = self._settings.max_response_bytes
        declared = response.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > cap:
            raise self._too_large(cap, int(declared))
        buffer = bytearray()
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                buffer += chunk
                if len(buffer) > cap:
                    raise self._too_large(cap, None)
        return bytes(buffer)

    @staticmethod
    def _too_large(cap: int, declared: int | None) -> errors.ResponseTooLarge:
        details: dict[str, Any] = {"limit_bytes": cap}
        if declared is not None:
            details["content_length"] = declared
        size = f"{declared} bytes" if declared is not None else "more than that"
        return errors.ResponseTooLarge(
            f"Brave's answer was refused: it is {size}, over the {cap}-byte cap.", details=details
        )

    @staticmethod
    async def _read_error_body(response: httpx2.Response) -> bytes:
        """Read at most ERROR_BODY_CAP_BYTES of an error body; an undecodable one counts as empty."""
        buffer = bytearray()
        try:
            async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    buffer += chunk
                    if len(buffer) >= ERROR_BODY_CAP_BYTES:
                        break
        except httpx2.DecodingError:
            return b""
        return bytes(buffer[:ERROR_BODY_CAP_BYTES])

    # -- error mapping --------------------------------------------------------------------------

    def _map_error(
        self, endpoint: Endpoint, response: httpx2.Response, body: bytes, info: RateLimitInfo | None
    ) -> errors.BraveSearchError:
        """Turn a non-2xx answer into the typed error an agent can act on."""
        status = response.status_code
        error = _brave_error(body)
        code = error.get("code") if error is not None else None
        # Brave's codes look like RATE_LIMITED; anything else (a proxy's text, an echoed token) is not kept.
        code = code if isinstance(code, str) and _BRAVE_CODE.fullmatch(code) else None
        raw_detail = error.get("detail") if error is not None else None
        detail = self._safe(raw_detail) if isinstance(raw_detail, str) else ""
        meta = error.get("meta") if error is not None else None
        meta = meta if isinstance(meta, dict) else {}
        details: dict[str, Any] = {}
        for name in META_DETAIL_FIELDS:
            value = meta.get(name)
            if isinstance(value, bool | int | float):
                details[name] = value
            elif isinstance(value, str) and value:
                details[name] = self._safe(value, DETAIL_VALUE_CAP_CHARS)
        retry_after = parse_retry_after(response.headers.get("retry-after"), response.headers.get("date"))
        reason = response.reason_phrase or "error"
        said = detail or f"HTTP {status} {reason}"
        common: dict[str, Any] = {"status": status, "brave_code": code, "details": details}

        if status == 401 or code in AUTH_CODES:
            return errors.AuthFailed(self._safe(f"Brave rejected the API key: {said}"), **common)
        if code in PLAN_CODES:
            return errors.NotInPlan(self._plan_message(endpoint, said, details), **common)
        if status == 429:
            if code == "QUOTA_LIMITED":
                return errors.QuotaExceeded(
                    self._safe(f"Brave's monthly quota for this key is used up: {said}"),
                    retry_after=retry_after,
                    **common,
                )
            if code in (None, "RATE_LIMITED"):
                if retry_after is None and info is not None:
                    retry_after = info.reset_seconds
                return errors.RateLimited(
                    self._safe(f"Brave's per-second rate limit was hit: {said}"), retry_after=retry_after, **common
                )
            return errors.UpstreamError(
                self._safe(f"Brave refused the request (HTTP 429 {code}): {said}"), retryable=False, **common
            )
        if status == 402 and code == "USAGE_LIMIT_EXCEEDED":
            return errors.QuotaExceeded(self._safe(f"Brave's usage limit for this key is reached: {said}"), **common)
        if status == 422 and code == "VALIDATION":
            return self._validation(said, meta, common)
        if status == 403 and error is None:
            return errors.UpstreamError(
                "HTTP 403 without a Brave error body: usually a proxy or web application firewall in front of "
                "Brave refused the request, not Brave itself.",
                retryable=False,
                **common,
            )
        if error is None and body.strip():
            said = f"HTTP {status} {reason} (the body was not Brave's error JSON)"
        return errors.UpstreamError(
            self._safe(f"Brave answered with an error: {said}"),
            retryable=status >= 500,
            retry_after=retry_after,
            **common,
        )

    def _plan_message(self, endpoint: Endpoint, said: str, details: dict[str, Any]) -> str:
        plan = details.get("plan")
        needed = PLAN_NEEDED.get(endpoint)
        text = f"Brave says this is not in the key's plan: {said}"
        if plan:
            text += f" Your plan: {plan}."
        if needed:
            details["plan_needed"] = needed
            text += f" The {ENDPOINT_NAMES[endpoint]} endpoint needs Brave's {needed} plan."
        else:
            text += " An option in this request needs a higher Brave plan; drop it or upgrade."
        return self._safe(text)

    def _validation(self, said: str, meta: dict[str, Any], common: dict[str, Any]) -> errors.UpstreamValidation:
        problems: list[dict[str, Any]] = []
        raw_errors = meta.get("errors")
        for item in raw_errors[:MAX_VALIDATION_ERRORS] if isinstance(raw_errors, list) else []:
            if not isinstance(item, dict):
                continue
            loc = item.get("loc")
            name = loc[-1] if isinstance(loc, list) and loc else None
            problem: dict[str, Any] = {
                "field": self._safe(str(name), DETAIL_VALUE_CAP_CHARS) if name is not None else None,
                "message": self._safe(str(item.get("msg", "")), DETAIL_VALUE_CAP_CHARS),
            }
            if item.get("input") is not None:
                problem["input"] = self._safe(str(item["input"]), DETAIL_VALUE_CAP_CHARS)
            problems.append(problem)
        common["details"]["errors"] = problems
        text = f"Brave rejected a parameter: {said}"
        if problems:
            text += " (" + "; ".join(f"{p['field'] or '?'}: {p['message']}" for p in problems[:3]) + ")"
        return errors.UpstreamValidation(self._safe(text), **common)
