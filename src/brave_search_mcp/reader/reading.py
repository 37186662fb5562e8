"""Reading a URL end to end: the shared cache first, else fetch safely, extract off the event loop, cache.

Answers are cached as ``Document`` bytes in the state backend's cache (shared by every process on it),
under the URL asked for and under the final URL after redirects, for ``BRAVE_SEARCH_READ_CACHE_TTL_SECONDS``;
a page that says ``Cache-Control: no-store`` is read but never stored. Paging through a long page and
picking sections therefore cost no new request while the entry lives. Identical concurrent reads make
one request (the cache's single flight).
"""

from __future__ import annotations

import functools
import hashlib
import ssl
import time
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
import httpcore2
import httpx2

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.reader.addresses import AddressPolicy, Resolver, system_resolver
from brave_search_mcp.reader.document import Document
from brave_search_mcp.reader.extract import extract
from brave_search_mcp.reader.fetch import (
    POLITENESS_BURST,
    POLITENESS_RATE,
    FetchSetup,
    RawPage,
    fetch_page,
    parse_target,
)
from brave_search_mcp.state.base import Fetch, StateBackend
from brave_search_mcp.upstream.retry import RetryPolicy
from brave_search_mcp.upstream.retrying import Retrier

CACHE_PREFIX = "read:v1:"
READ_RETRIES = 1  # a web page gets one more try: a site is not an API with a quota to protect, nor one to hammer


class _NotStored(Exception):
    """Carries a document out of the cache's fetch without the cache keeping it (``no-store`` pages)."""

    def __init__(self, document: Document) -> None:
        super().__init__("no-store")
        self.document = document


@dataclass(frozen=True)
class ReadResult:
    """A read document and whether it came from the shared cache (no request was made)."""

    document: Document
    cached: bool


@dataclass
class UrlReader:
    """The reader the composition root builds once: settings, state backend, clock, and the seams tests control.

    ``clock`` must be the state backend's clock (deadlines and the politeness limiter are in its time).
    """

    settings: Settings
    backend: StateBackend
    clock: Clock = time.time
    resolver: Resolver = system_resolver
    network: httpcore2.AsyncNetworkBackend | None = None
    ssl_context: ssl.SSLContext | None = None
    sleep: Sleep = anyio.sleep  # waits between tries, on ``clock``'s time
    _context: ssl.SSLContext | None = field(default=None, init=False, repr=False)
    _retrier: Retrier = field(init=False, repr=False)  # every page's tries, built once with the reader

    def __post_init__(self) -> None:
        policy = RetryPolicy(retries=min(self.settings.retries, READ_RETRIES))
        self._retrier = Retrier(policy, clock=self.clock, sleep=self.sleep)

    def _setup(self) -> FetchSetup:
        if self._context is None:  # built on first use (loading the trust store costs a few milliseconds)
            self._context = self.ssl_context if self.ssl_context is not None else httpx2.create_ssl_context()
        return FetchSetup(
            policy=AddressPolicy.from_entries(self.settings.read_allowed_hosts),
            max_bytes=self.settings.read_max_bytes,
            timeout=self.settings.read_timeout_seconds,
            limiter=self._limiter,
            clock=self.clock,
            resolver=self.resolver,
            network=self.network,
            ssl_context=self._context,
        )

    def _limiter(self, host: str) -> Limiter:
        return self.backend.limiter("read:" + host, rate=POLITENESS_RATE, burst=POLITENESS_BURST)

    async def read(self, url: str, *, deadline: float | None = None) -> ReadResult:
        """The document at ``url`` from the cache or the network; typed errors (FETCH_BLOCKED, NOT_FOUND, …)."""
        target = parse_target(url.strip(), hop=0)  # INVALID_ARGUMENT / FETCH_BLOCKED before any cache look-up
        ttl = self.settings.read_cache_ttl_seconds
        if ttl <= 0:
            return ReadResult((await self._fetch(str(target), deadline))[0], cached=False)

        async def fetch() -> bytes:
            document, no_store = await self._fetch(str(target), deadline)
            if no_store:
                raise _NotStored(document)
            return document.to_bytes()

        try:
            raw, hit = await self.backend.cache.get_or_fetch(cache_key(str(target)), fetch, ttl)
        except _NotStored as passed:
            return ReadResult(passed.document, cached=False)
        document = Document.from_bytes(raw)
        if document is None:  # a damaged or older entry: read afresh (it is replaced when it expires)
            return ReadResult((await self._fetch(str(target), deadline))[0], cached=False)
        if not hit and cache_key(document.final_url) != cache_key(str(target)):
            await self.backend.cache.get_or_fetch(cache_key(document.final_url), _constant(raw), ttl)
        return ReadResult(document, cached=hit)

    async def _fetch(self, url: str, deadline: float | None) -> tuple[Document, bool]:
        """The page fetched (one more try after a 5xx, a timeout or a dropped connection) and extracted, and
        whether it said ``no-store``; the same retry rule as every upstream, and each try waits for the host."""
        setup = self._setup()

        async def attempt() -> RawPage:
            return await fetch_page(url, setup, deadline=deadline)

        page = await self._retrier.run(attempt, deadline=deadline)
        return await self._extract(page, deadline), page.no_store

    async def _extract(self, page: RawPage, deadline: float | None) -> Document:
        """Extraction is CPU work (trafilatura, pypdf): a worker thread, abandoned if the deadline passes first."""
        work = functools.partial(
            extract,
            url=page.url,
            final_url=page.final_url,
            kind=page.kind,
            content_type=page.media or "application/octet-stream",
            body=page.body,
            charset=page.charset,
        )
        limit = None if deadline is None else max(0.001, deadline - self.clock())
        try:
            with anyio.fail_after(limit):
                document = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            raise errors.UpstreamTimeout(
                "Reading the page took longer than the call's deadline.", details={"stage": "extract"}
            ) from None
        assert isinstance(document, Document)
        return document


def _constant(value: bytes) -> Fetch:
    async def fetch() -> bytes:
        return value

    return fetch


def cache_key(url: str) -> str:
    """The cache key of a page: a hash of its URL without the fragment (the key never holds the URL itself)."""
    bare = url.split("#", 1)[0]
    return CACHE_PREFIX + hashlib.sha256(bare.encode("utf-8", "surrogatepass")).hexdigest()


async def read_document(
    url: str,
    *,
    settings: Settings,
    backend: StateBackend,
    clock: Clock = time.time,
    deadline: float | None = None,
    resolver: Resolver = system_resolver,
    network: httpcore2.AsyncNetworkBackend | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> ReadResult:
    """One read without keeping a ``UrlReader`` (the library and tests); see ``UrlReader.read``."""
    reader = UrlReader(settings, backend, clock, resolver, network, ssl_context)
    return await reader.read(url, deadline=deadline)
