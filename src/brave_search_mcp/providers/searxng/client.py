"""The SearXNG provider: a self-hosted metasearch engine as a second source when Brave fails or is not wanted.

Speaks SearXNG's JSON API as real instances answer it (team notes, searxng-real.md): a form ``POST
{base}/search`` (a GET with ``format=json`` in the URL counts against the bot limiter's 4 API requests
an hour; the form does not), with headers the limiter lets through (``Accept`` admitting text/html,
``Accept-Language``, gzip), redirects never followed. ``params`` translates the request, ``results`` maps
the answers, ``statuses`` names what a status means. Retries, transport errors, capped bodies and JSON
decoding are the ones every upstream client shares (``upstream/``); SearXNG's 429 (a bot limiter that
counts every try) is not retried. At most ``rate`` request starts in any ``rate_window`` seconds.

Paging: an instance answers pages of its own size (27 merged results on the measured one), not ``count``.
Our page ``offset`` (Brave's meaning: skip ``offset * count`` results) is a window of the instance's list,
read page by page. Each instance page is cached (in the shared state when there is one, so every process
of the user reuses it): besides saving requests, that keeps paging consistent, because a real instance
returns equal-score results in a different order on identical requests — refetching page 1 for our
offset 1 could repeat one result and skip another.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
import httpx2

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import Clock, Sleep, moved
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    BraveSearchError,
    InvalidArgument,
    NoResults,
    ParseError,
    ProviderMisconfigured,
    UpstreamTimeout,
    WarningCode,
)
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.providers.searxng.params import CATEGORIES, search_form
from brave_search_mcp.providers.searxng.results import PROVIDER_NAME, Window, page_failure, window_page
from brave_search_mcp.providers.searxng.statuses import probe_outcome, redirect_error, status_error
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.ratelimit.plan import EXACT
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.state.base import SharedCache
from brave_search_mcp.state.memory import MemoryCache, memory_limiter
from brave_search_mcp.state.response_cache import FRESHNESS_TTL_SECONDS, make_key
from brave_search_mcp.upstream.bodies import decode_json_object, read_capped, read_error_body
from brave_search_mcp.upstream.retry import RetryPolicy
from brave_search_mcp.upstream.retrying import Retrier
from brave_search_mcp.upstream.transport_errors import typed_transport_errors

__all__ = ["SearxngConfig", "SearxngProvider"]

_NOT_JSON_HINT = "Check that the SearXNG base URL points at SearXNG itself."
# Brave's rules the request's own warnings state that SearXNG does not share: it pages images, knows moderate.
_NOT_SEARXNG_RULES = frozenset({WarningCode.OFFSET_IGNORED.value, WarningCode.SAFE_SEARCH_ADJUSTED.value})
# What a bot limiter wants to see (searx/botdetection): text/html accepted, a language, compression.
_ACCEPT = "application/json, text/html;q=0.1"


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
    cache_ttl: float = 300.0  # seconds an instance page is reused (0 = never cached)
    cache_size: int = 256  # instance pages kept when no shared state is handed in
    max_pages: int = 10  # instance pages one search may read to reach a far offset

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ProviderMisconfigured(
                "The SearXNG base URL must start with http:// or https:// (e.g. http://localhost:8080).",
                details={"provider": PROVIDER_NAME, "setting": "base_url"},
            )
        if self.timeout <= 0 or self.retries < 0 or self.max_response_bytes <= 0 or self.max_pages < 1:
            raise ValueError("timeout, max_response_bytes and max_pages must be positive, retries non-negative")

    def queue(self, make: Callable[..., Limiter], name: str) -> Limiter:
        """This instance's queue from ``make`` (a state backend's ``limiter`` or ``memory_limiter`` on a clock):
        at most ``rate`` starts per ``rate_window``, exactly."""
        return make(name, rate=self.rate / self.rate_window, burst=self.rate, margin=EXACT, label="SearXNG")

    @property
    def search_url(self) -> str:
        """``{base}/search``; a base with a path prefix (``https://host/searx``) keeps it."""
        return self.base_url.rstrip("/") + "/search"


@dataclass
class _Read:
    """How the instance pages of one search were got: requests sent, and whether every page was cached."""

    attempts: int = 0
    cached: bool = True


def _later_page_failed(pageno: int, exc: BraveSearchError) -> WarningItem:
    return WarningItem(
        code=WarningCode.ENGINES_UNRESPONSIVE,
        message=f"SearXNG's page {pageno} failed ({exc.code.value}); the results shown come from the pages before it.",
    )


class SearxngProvider:
    """Searches one SearXNG instance; implements ``Provider`` for web, news, images and videos."""

    name = PROVIDER_NAME

    def __init__(
        self,
        config: SearxngConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
        cache: SharedCache | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        # the composition root hands in the state backend's limiter (shared by processes, its clock); alone, the
        # provider queues in one of its own on its clock: at most ``rate`` starts per ``rate_window``, exactly
        self._limiter = limiter or config.queue(partial(memory_limiter, clock=clock, sleep=sleep), "searxng")
        policy = RetryPolicy(config.retries, max_seconds=2.0, retry_rate_limited=False)
        self._retrier = Retrier(policy, clock=clock, sleep=sleep)
        self._cache = cache if cache is not None else MemoryCache(config.cache_size, clock=clock)
        instance = f"{config.base_url.rstrip('/')}\n{config.username or ''}"
        self._cache_prefix = "searxng:" + hashlib.sha256(instance.encode()).hexdigest()[:16]
        auth = httpx2.BasicAuth(config.username, config.password or "") if config.username else None
        # trust_env (and no transport outside tests): httpx2 itself reads HTTP(S)_PROXY, ALL_PROXY, NO_PROXY and
        # SSL_CERT_FILE / SSL_CERT_DIR, the corporate-network conventions (tests/test_proxies.py, README)
        self._client = httpx2.AsyncClient(
            transport=transport,
            trust_env=True,
            auth=auth,
            timeout=config.timeout,
            follow_redirects=False,  # an external !!bang answers 302 to another site: never go there
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Language": "en",  # also keeps SearXNG's engine-failure reasons in English
                "Accept-Encoding": "gzip, deflate",
                **dict(config.headers),
            },
        )

    def supports(self, search_type: SearchType) -> bool:
        """SearXNG serves web (``general``), news, images and videos."""
        return search_type in CATEGORIES

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """Our page of the instance's list, read through its cached pages; raise a BraveSearchError."""
        if not self.supports(request.search_type):
            raise InvalidArgument(
                f"The SearXNG provider does not serve {request.search_type} search.", field="search_type"
            )
        form, warnings = search_form(request)
        window, read = Window(request.offset, request.count), _Read()
        for pageno in range(1, self.config.max_pages + 1):
            try:
                data = await self._page(form, pageno, deadline, read)
            except BraveSearchError as exc:
                if len(window.results) <= window.start:
                    raise
                warnings.append(_later_page_failed(pageno, exc))
                break  # our page began on earlier instance pages: show what they hold
            window.add(data, request.search_type)
            if window.full or window.exhausted:
                break
        else:
            if not window.full:
                warnings.append(self._pages_capped(window))
                if len(window.results) <= window.start:
                    raise NoResults(
                        f"SearXNG: offset {request.offset} starts at result {window.start + 1}, past the "
                        f"{len(window.results)} results of the instance's first {self.config.max_pages} pages (the "
                        "most one search reads).",
                        details={"provider": PROVIDER_NAME},
                    )
        page = window_page(window, request, warnings)
        return replace(page, cached=read.cached, attempts=read.attempts, superseded=_NOT_SEARXNG_RULES)

    def _pages_capped(self, window: Window) -> WarningItem:
        """Far offsets can need more instance pages than one search may read."""
        return WarningItem(
            code=WarningCode.OFFSET_CAPPED,
            message=f"SearXNG: read the instance's first {self.config.max_pages} pages ({len(window.results)} "
            "results), the most one search reads; results beyond them were not reached.",
        )

    async def cache_stats(self) -> dict[str, Any]:
        """The instance pages' cache, for the status tool (on a shared state: every entry the store holds)."""
        return await self._cache.stats()

    async def probe(self, *, deadline: float | None = None) -> dict[str, Any]:
        """Is there a SearXNG with JSON output at the base URL? One form POST with only ``format=json``: it
        queries no engine, and the instance answers 400 "No query" with JSON on, 403 with JSON off."""
        started = time.perf_counter()
        entry: dict[str, Any] = {"provider": PROVIDER_NAME, "endpoint": "/search"}
        try:
            await self._limiter.acquire(deadline=self._on_limiter_clock(deadline))
            timeout = self._attempt_timeout(deadline)
            with typed_transport_errors("SearXNG", timeout, self._safe), anyio.fail_after(timeout):
                response = await self._client.post(self.config.search_url, data={"format": "json"})
        except BraveSearchError as exc:
            entry.update(ok=False, code=exc.code.value, message=exc.message)
        else:
            ctype = response.headers.get("content-type", "")
            location = response.headers.get("location", "")
            entry.update(probe_outcome(response.status_code, ctype, location, self.config.search_url))
            entry["http_status"] = response.status_code
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return entry

    # ------------------------------------------------------------------------------ one instance page

    async def _page(self, form: dict[str, str], pageno: int, deadline: float | None, read: _Read) -> dict[str, Any]:
        """One instance page, from the cache when it holds it (errors and failed pages are never cached)."""
        fields = {**form, "pageno": str(pageno)}
        mine: list[dict[str, Any]] = []

        async def fetch() -> bytes:
            body, attempts = await self._fetch(fields, deadline)
            read.attempts += attempts
            read.cached = False
            data = decode_json_object(body, "SearXNG", _NOT_JSON_HINT)
            failure = page_failure(data)
            if failure is not None:
                raise failure
            mine.append(data)
            return body

        ttl = self.config.cache_ttl if "time_range" not in fields else min(self.config.cache_ttl, FRESHNESS_TTL_SECONDS)
        if ttl <= 0:
            await fetch()
            return mine[0]
        key = make_key(f"{self._cache_prefix}/search", list(fields.items()))
        pages: list[dict[str, Any]] = []

        def readable(body: bytes) -> bool:  # a stored page that is not one is dropped and fetched again
            pages.append(decode_json_object(body, "SearXNG", _NOT_JSON_HINT))
            return page_failure(pages[-1]) is None

        body, _hit = await self._cache.get_or_fetch(key, fetch, ttl, readable)
        return mine[0] if mine else pages[-1] if pages else decode_json_object(body, "SearXNG", _NOT_JSON_HINT)

    def _on_limiter_clock(self, deadline: float | None) -> float | None:
        return None if deadline is None else moved(deadline, self._clock, self._limiter.clock)

    def _safe(self, text: str, limit: int) -> str:
        """Library text made fit for a message: the configured password and header values never slip through."""
        for secret in (self.config.password, *self.config.headers.values()):
            if secret:
                text = text.replace(secret, "[redacted]")
        return clean_text(text, limit=limit, markup=False)

    def _attempt_timeout(self, deadline: float | None) -> float:
        timeout = self.config.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - self._clock())
            if timeout <= 0:
                raise UpstreamTimeout("The call's deadline passed before SearXNG could be asked.")
        return timeout

    async def _fetch(self, fields: dict[str, str], deadline: float | None) -> tuple[bytes, int]:
        attempt = 0

        async def one_attempt() -> bytes:
            nonlocal attempt
            attempt += 1
            await self._limiter.acquire(deadline=self._on_limiter_clock(deadline))
            return await self._attempt(fields, deadline)

        try:
            body = await self._retrier.run(one_attempt, deadline=deadline)
        except BraveSearchError as exc:
            exc.details.setdefault("provider", PROVIDER_NAME)
            exc.details.setdefault("attempts", attempt)
            raise
        return body, attempt

    async def _attempt(self, fields: dict[str, str], deadline: float | None) -> bytes:
        timeout = self._attempt_timeout(deadline)
        url = self.config.search_url
        with typed_transport_errors("SearXNG", timeout, self._safe), anyio.fail_after(timeout):
            async with self._client.stream("POST", url, data=fields, timeout=timeout) as resp:
                status = resp.status_code
                if 300 <= status < 400:
                    raise redirect_error(status, resp.headers.get("location", ""), url)
                if not 200 <= status < 300:
                    raise status_error(status, resp.headers, await read_error_body(resp), self.config.base_url)
                ctype = resp.headers.get("content-type", "")
                body = await read_capped(resp, self.config.max_response_bytes, upstream="SearXNG")
        if "json" not in ctype.lower():  # a login page, the HTML results page, a proxy: not the API
            shown = clean_text(ctype, limit=60) or "no content type"
            raise ParseError(
                f"SearXNG answered {shown}, not JSON. {_NOT_JSON_HINT}", details={"provider": PROVIDER_NAME}
            )
        return body
