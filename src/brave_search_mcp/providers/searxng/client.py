"""The SearXNG provider: a self-hosted metasearch engine as a second source when Brave fails or is not wanted.

``instance`` speaks to the instance (form POSTs, pace, retries, the call's time on it), ``params`` translates the
request, ``results`` maps the answers, ``statuses`` names what a status means; this module reads our page out of
the instance's pages.

Paging: an instance answers pages of its own size (27 merged results on the measured one), not ``count``.
Our page ``offset`` (Brave's meaning: skip ``offset * count`` results) is a window of the instance's list,
read page by page; a page that adds no new result (an instance whose pages repeat page 1) is the end of the
list. Each instance page is cached (in the shared state when there is one, so every process of the user
reuses it): besides saving requests, that keeps paging consistent, because a real instance returns
equal-score results in a different order on identical requests — refetching page 1 for our offset 1 could
repeat one result and skip another. ``disable_cache`` asks the instance afresh and stores nothing.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio
import httpx2

from brave_search_mcp.brave.counters import EndpointCounters
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import BraveSearchError, InvalidArgument, NoResults, RateLimited, WarningCode
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.observe import Observer
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.providers.searxng.instance import NOT_JSON_HINT, CallBudget, Instance, SearxngConfig
from brave_search_mcp.providers.searxng.params import CATEGORIES, SECTIONS, named_sections, search_form
from brave_search_mcp.providers.searxng.results import PROVIDER_NAME, Window, page_failure, past_the_end, window_page
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.render.text import seconds_text
from brave_search_mcp.state.base import SharedCache
from brave_search_mcp.state.memory import MemoryCache
from brave_search_mcp.state.response_cache import FRESHNESS_TTL_SECONDS, make_key
from brave_search_mcp.upstream.bodies import decode_json_object

__all__ = ["SUPERSEDED", "SearxngConfig", "SearxngProvider"]

# Brave's rules the request's own warnings state that SearXNG does not share: it pages images, knows moderate, has
# no 400-character / 50-word query limit, and judges countries and languages by its own rules (``params``).
SUPERSEDED = frozenset(
    code.value
    for code in (
        WarningCode.OFFSET_IGNORED,
        WarningCode.SAFE_SEARCH_ADJUSTED,
        WarningCode.QUERY_TRUNCATED,
        WarningCode.INVALID_COUNTRY,
        WarningCode.INVALID_SEARCH_LANGUAGE,
        WarningCode.INVALID_UI_LANGUAGE,
        WarningCode.INVALID_GOGGLES,
        WarningCode.INVALID_RESULT_FILTER,
    )
)


def _later_page_failed(pageno: int, exc: BraveSearchError) -> WarningItem:
    """A page after the one our window starts on failed: what is shown is cut short, and the agent needs to know
    whether waiting (the pace refused it) or nothing (its engines or the instance failed) brings the rest."""
    if isinstance(exc, RateLimited):
        wait = f"; retry in {seconds_text(exc.retry_after)} for the rest" if exc.retry_after else ""
        return WarningItem(
            code=WarningCode.PAGE_RATE_LIMITED,
            message=f"SearXNG's page {pageno} was refused by the rate limit ({exc.code.value}); the results shown "
            f"come from the pages before it{wait}.",
        )
    return WarningItem(
        code=WarningCode.ENGINES_UNRESPONSIVE,
        message=f"SearXNG's page {pageno} failed ({exc.code.value}); the results shown come from the pages before it.",
    )


class SearxngProvider:
    """Searches one SearXNG instance; implements ``Provider`` for web, news, images and videos."""

    name = PROVIDER_NAME
    superseded = SUPERSEDED
    result_sections = frozenset(SECTIONS)  # what result_filter may name when SearXNG answers (Brave has others)

    def __init__(
        self,
        config: SearxngConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
        cache: SharedCache | None = None,
        limiter: Limiter | None = None,
        wall_clock: Clock = time.time,
        observer: Observer | None = None,
    ) -> None:
        self.config = config
        self._wall_clock = wall_clock  # news and video ages ("2 days ago") are told against it
        self._instance = Instance(
            config, transport=transport, clock=clock, sleep=sleep, limiter=limiter, observer=observer
        )
        self._cache = cache if cache is not None else MemoryCache(config.cache_size, clock=clock)
        instance = f"{config.base_url.rstrip('/')}\n{config.username or ''}"
        self._cache_prefix = "searxng:" + hashlib.sha256(instance.encode()).hexdigest()[:16]
        self._counters = {kind: EndpointCounters() for kind in CATEGORIES}

    def supports(self, search_type: SearchType) -> bool:
        """SearXNG serves web (``general``), news, images and videos."""
        return search_type in CATEGORIES

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._instance.aclose()

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """Our page of the instance's list, read through its cached pages; raise a BraveSearchError."""
        if not self.supports(request.search_type):
            raise InvalidArgument(
                f"The SearXNG provider does not serve {request.search_type} search.", field="search_type"
            )
        counters, budget = self._counters[request.search_type], self._instance.budget()
        try:
            page = await self._search(request, deadline, budget)
        except BraveSearchError as exc:
            counters.count_error(exc.code.value)
            raise
        else:
            counters.last = "ok"
        finally:
            counters.requests += budget.attempts
            counters.cache_hits += budget.cache_hits
        return page

    async def _search(self, request: SearchRequest, deadline: float | None, budget: CallBudget) -> ProviderPage:
        form, warnings = search_form(request)
        named = named_sections(request, warnings)
        try:
            page = await self._read(request, form, warnings, deadline, budget)
        except BraveSearchError as exc:  # what SearXNG's rules changed holds for a failed call too
            error = exc.for_call(warnings)
            error.details.setdefault("attempts", budget.attempts)  # a page it answered may fail too (its engines)
            raise error from exc.__cause__
        return replace(page, named=named)

    async def _read(
        self,
        request: SearchRequest,
        form: dict[str, str],
        warnings: list[WarningItem],
        deadline: float | None,
        budget: CallBudget,
    ) -> ProviderPage:
        now = datetime.fromtimestamp(self._wall_clock(), UTC)
        window = Window(request.offset, request.count, now=now)
        for pageno in range(1, self.config.max_pages + 1):
            try:
                data = await self._page(form, pageno, request, deadline, budget)
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
                        details=past_the_end(window),
                    )
        waited = self._instance.waited(budget)
        page = window_page(window, request, [*warnings, waited] if waited else warnings)
        return replace(
            page,
            cached=budget.cached,
            attempts=budget.attempts,
            superseded=SUPERSEDED,
            offset=request.offset,
            request_url=budget.request_url,
            sites_as="site: terms" if request.sites is not None else None,
        )

    def _pages_capped(self, window: Window) -> WarningItem:
        """Far offsets can need more instance pages than one search may read."""
        return WarningItem(
            code=WarningCode.OFFSET_CAPPED,
            message=f"SearXNG: read the instance's first {self.config.max_pages} pages ({len(window.results)} "
            "results), the most one search reads; results beyond them were not reached.",
        )

    async def status(self) -> dict[str, Any]:
        """What the status tool shows of the instance: its URL (no credentials), its pages' cache (on a shared state:
        every entry the store holds), the pace in force, and per search type this process's requests, errors and
        cache hits (``counters``, which the status tool shows when verbose)."""
        return {
            "url": self.config.shown_url(),
            "timeout_seconds": self.config.timeout,
            "cache": await self._cache.stats(),
            "pace": await self._instance.pace(),
            "counters": {kind: replace(c, by_code=dict(c.by_code)) for kind, c in self._counters.items()},
        }

    async def probe(self, *, deadline: float | None = None) -> dict[str, Any]:
        """Is there a SearXNG with JSON output at the base URL (one POST that queries no engine)?"""
        return await self._instance.probe(deadline=deadline)

    # ------------------------------------------------------------------------------ one instance page

    async def _page(
        self, form: dict[str, str], pageno: int, request: SearchRequest, deadline: float | None, budget: CallBudget
    ) -> dict[str, Any]:
        """One instance page, from the cache when it holds it (errors and failed pages are never cached)."""
        fields = {**form, "pageno": str(pageno)}
        budget.request_url = self.config.shown_url(fields)
        mine: list[dict[str, Any]] = []

        async def fetch() -> bytes:
            body = await self._instance.fetch(fields, deadline, budget)
            data = decode_json_object(body, "SearXNG", NOT_JSON_HINT)
            failure = page_failure(data, request.search_type)
            if failure is not None:
                raise failure
            mine.append(data)
            return body

        ttl = self.config.cache_ttl if "time_range" not in fields else min(self.config.cache_ttl, FRESHNESS_TTL_SECONDS)
        if ttl <= 0 or not request.use_cache:
            await fetch()
            return mine[0]
        key = make_key(f"{self._cache_prefix}/search", list(fields.items()))
        pages: list[dict[str, Any]] = []

        def readable(body: bytes) -> bool:  # a stored page that is not one is dropped and fetched again
            pages.append(decode_json_object(body, "SearXNG", NOT_JSON_HINT))
            return page_failure(pages[-1], request.search_type) is None

        body, hit = await self._cache.get_or_fetch(key, fetch, ttl, readable)
        budget.cache_hits += hit
        return mine[0] if mine else pages[-1] if pages else decode_json_object(body, "SearXNG", NOT_JSON_HINT)
