"""Reading a URL end to end: the shared cache first, else fetch safely, extract off the event loop, cache.

Answers are cached as ``Document`` bytes in the state backend's cache (shared by every process on it),
under the URL asked for and under the final URL after redirects, for ``BRAVE_SEARCH_READ_CACHE_TTL_SECONDS``;
a page that says ``Cache-Control: no-store`` is read but never stored. Paging through a long page and
picking sections therefore cost no new request while the entry lives. Identical concurrent reads make
one request (the cache's single flight). The address policy in force decides every read, a hit included: a
cached page keeps the hosts and addresses it was read from, and they are judged again before it is served
(the cache is shared by processes whose ``BRAVE_SEARCH_READ_ALLOWED_HOSTS`` may differ).

One read has one deadline, ``BRAVE_SEARCH_READ_TIMEOUT_SECONDS`` (or the call's, when sooner): a retry
shares it, so a stalled site costs the timeout once, and a TIMEOUT says how many tries it made.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import ssl
import time
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.to_thread
import httpcore2
import httpx2

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.reader.addresses import AddressPolicy, Resolver, recheck, system_resolver
from brave_search_mcp.reader.browser import BYTES_FACTOR, Renderer, RenderFailed, RenderUnavailable
from brave_search_mcp.reader.browser_find import HOW_TO_ENABLE
from brave_search_mcp.reader.content import decode_text
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
from brave_search_mcp.reader.shell import is_thin, shell_reason
from brave_search_mcp.state.base import Fetch, StateBackend
from brave_search_mcp.upstream.retry import RetryPolicy
from brave_search_mcp.upstream.retrying import Retrier

CACHE_PREFIX = "read:v2:"
READ_RETRIES = 1  # a web page gets one more try: a site is not an API with a quota to protect, nor one to hammer
RenderMode = Literal["auto", "never", "always"]


class _NotStored(Exception):
    """Ends the cache's fetch without the cache keeping the page (``no-store``); the read keeps what it fetched."""

    def __init__(self, document: Document) -> None:
        super().__init__("no-store")
        self.document = document


@dataclass(frozen=True)
class ReadResult:
    """A read document, whether it came from the shared cache (no request was made), and the tries it took."""

    document: Document
    cached: bool
    attempts: int = 0


@dataclass(frozen=True)
class _Fetched:
    """A page just fetched, and whether it said ``Cache-Control: no-store`` (read, never stored)."""

    result: ReadResult
    no_store: bool


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
    renderer: Renderer | None = None  # the process's browser for app shells (None: rendering unavailable)
    _context: ssl.SSLContext | None = field(default=None, init=False, repr=False)
    _retrier: Retrier = field(init=False, repr=False)  # every page's tries, built once with the reader

    def __post_init__(self) -> None:
        policy = RetryPolicy(retries=min(self.settings.retries, READ_RETRIES))
        self._retrier = Retrier(policy, clock=self.clock, sleep=self.sleep)

    def _policy(self) -> AddressPolicy:
        return AddressPolicy.from_entries(self.settings.read_allowed_hosts)

    def _setup(self) -> FetchSetup:
        if self._context is None:  # built on first use (loading the trust store costs a few milliseconds)
            self._context = self.ssl_context if self.ssl_context is not None else httpx2.create_ssl_context()
        return FetchSetup(
            policy=self._policy(),
            max_bytes=self.settings.read_max_bytes,
            timeout=self.settings.read_timeout_seconds,
            limiter=self._limiter,
            clock=self.clock,
            resolver=self.resolver,
            network=self.network,
            ssl_context=self._context,
        )

    def _limiter(self, host: str) -> Limiter:
        return self.backend.limiter("read:" + host, rate=POLITENESS_RATE, burst=POLITENESS_BURST, local=True)

    async def aclose(self) -> None:
        """Close the browser, if one was launched (the composition root calls this when the server stops)."""
        if self.renderer is not None:
            await self.renderer.aclose()

    def check(self, url: str) -> None:
        """INVALID_ARGUMENT now for a ``url`` that is not an absolute URL (before several reads start)."""
        parse_target(url.strip(), hop=0)

    async def read(self, url: str, *, deadline: float | None = None, render: RenderMode = "auto") -> ReadResult:
        """The document at ``url`` from the cache or the network; typed errors (FETCH_BLOCKED, NOT_FOUND, …).

        ``render``: ``auto`` draws an app shell in the browser, ``always`` every HTML page, ``never`` none."""
        target = parse_target(url.strip(), hop=0)  # INVALID_ARGUMENT / FETCH_BLOCKED before any cache look-up
        ttl = self.settings.read_cache_ttl_seconds
        if ttl <= 0:
            return (await self._fetch(str(target), deadline, render)).result
        fetched: list[_Fetched] = []

        async def fetch() -> bytes:
            fresh = await self._fetch(str(target), deadline, render)
            fetched.append(fresh)
            if fresh.no_store:
                raise _NotStored(fresh.result.document)
            return fresh.result.document.to_bytes()

        read: list[Document] = []

        def readable(raw: bytes) -> bool:  # a stored page that is none (damaged, an older layout) is dropped, fetched
            document = Document.from_bytes(raw)
            if document is None:
                return False
            read.append(document)
            return True

        try:
            raw, hit = await self.backend.cache.get_or_fetch(cache_key(str(target), render), fetch, ttl, readable)
        except _NotStored:
            return fetched[0].result
        document = read[-1] if read else Document.from_bytes(raw)
        if document is None:  # not one a shared store gave (those pass ``readable``): read afresh, never fail
            return (await self._fetch(str(target), deadline, render)).result
        recheck(document.hops, self._policy())  # the policy in force decides, whoever fetched the page
        final_key = cache_key(document.final_url, render)
        if not hit and final_key != cache_key(str(target), render):
            await self.backend.cache.get_or_fetch(final_key, _constant(raw), ttl)
        return ReadResult(document, cached=hit, attempts=fetched[0].result.attempts if fetched else 0)

    async def _fetch(self, url: str, deadline: float | None, render: RenderMode = "auto") -> _Fetched:
        """The page fetched (one more try after a 5xx, a timeout or a dropped connection) and extracted; the same
        retry rule as every upstream, each try waiting for the host, all of them within the read's one deadline."""
        setup = self._setup()
        started = self.clock()
        allowed = setup.timeout if deadline is None else max(0.0, min(setup.timeout, deadline - started))
        deadline = started + allowed
        tries = 0

        async def attempt() -> RawPage:
            nonlocal tries
            tries += 1
            return await fetch_page(url, setup, deadline=deadline)

        try:
            page = await self._retrier.run(attempt, deadline=deadline)
        except errors.UpstreamTimeout as exc:
            raise _timed_out(exc, allowed, tries) from None
        except (errors.UpstreamStatusError, errors.NetworkError) as exc:  # requests went out: say how many
            exc.details.setdefault("attempts", tries)
            raise
        html = page.kind == "html"
        document, shell = await self._extract(page, deadline, shell=html and render != "always")
        document = dataclasses.replace(document, hops=page.hops)
        if not html or render == "never" or (render == "auto" and shell is None):
            if shell is not None and render == "never":
                document = dataclasses.replace(document, render_note=_never_note(shell))
            return _Fetched(ReadResult(document, cached=False, attempts=tries), page.no_store)
        drawn, kept = await self._render(page, document, setup.policy, deadline, shell)
        return _Fetched(ReadResult(drawn, cached=False, attempts=tries), page.no_store or not kept)

    async def _render(
        self, page: RawPage, static: Document, policy: AddressPolicy, deadline: float, shell: str | None
    ) -> tuple[Document, bool]:
        """The page drawn by its scripts, extracted from the browser's DOM; else the static read with a warning
        saying why (and not cached, so a later read may render it). Second value: whether it may be cached."""
        why = "render='always' was asked"
        if shell is not None:
            why = f"The page looks like {shell}, so its text is drawn by JavaScript"
        if self.renderer is None:
            return dataclasses.replace(static, render_note=_unavailable_note(why, HOW_TO_ENABLE)), False
        try:
            seconds = max(0.001, deadline - self.clock())
            cap = self.settings.read_max_bytes * BYTES_FACTOR
            drawn = await self.renderer.render(
                page.final_url, policy=policy, resolver=self.resolver, seconds=seconds, max_bytes=cap
            )
        except RenderUnavailable as exc:
            return dataclasses.replace(static, render_note=_unavailable_note(why, str(exc))), False
        except RenderFailed as exc:
            note = f"{why}, but rendering it failed ({exc}); this is the HTML as served."
            return dataclasses.replace(static, render_note=note), False
        rendered = RawPage(page.url, drawn.final_url, "text/html", "utf-8", "html", drawn.html.encode(), False, ())
        document, _ = await self._extract(rendered, deadline, shell=False)
        hops = _merged(page.hops, drawn.hops)
        return dataclasses.replace(document, hops=hops, drawn=True), drawn.complete

    async def _extract(self, page: RawPage, deadline: float | None, *, shell: bool) -> tuple[Document, str | None]:
        """Extraction is CPU work (trafilatura, pypdf): a worker thread, abandoned if the deadline passes first.
        With ``shell``, also why a thin HTML page is an app shell (None when it is not one)."""
        work = functools.partial(_extract_page, page, shell)
        limit = None if deadline is None else max(0.001, deadline - self.clock())
        try:
            with anyio.fail_after(limit):
                document, reason = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            raise errors.UpstreamTimeout(
                "Reading the page took longer than the call's deadline.", details={"stage": "extract"}
            ) from None
        assert isinstance(document, Document)
        return document, reason


def _extract_page(page: RawPage, shell: bool) -> tuple[Document, str | None]:
    """The page's document, and (asked with ``shell``) why it is an app shell when it reads thin."""
    document = extract(
        url=page.url,
        final_url=page.final_url,
        kind=page.kind,
        content_type=page.media or "application/octet-stream",
        body=page.body,
        charset=page.charset,
    )
    if not shell or not is_thin(document.markdown):
        return document, None
    return document, shell_reason(decode_text(page.body, page.charset, "html"))


def _merged(*hop_lists: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every host a page came through and every address it was reached at, once each (what a hit re-checks)."""
    merged: dict[str, list[str]] = {}
    for hops in hop_lists:
        for host, addresses in hops:
            seen = merged.setdefault(host, [])
            seen.extend(address for address in addresses if address not in seen)
    return tuple((host, tuple(addresses)) for host, addresses in merged.items())


def _unavailable_note(why: str, how: str) -> str:
    return f"{why}, but no browser can render it here: {how}."


def _never_note(shell: str) -> str:
    return f"The page looks like {shell}: its text is drawn by JavaScript; read it with render='auto' to see it."


def _timed_out(exc: errors.UpstreamTimeout, allowed: float, tries: int) -> errors.UpstreamTimeout:
    """The read's TIMEOUT: the host that did not answer, the read's whole time, and how many tries it made."""
    host = exc.details.get("host")
    if host is None:  # not the fetch's own timeout (none other is raised today): pass it on, counted
        exc.details.setdefault("attempts", tries)
        return exc
    seconds = round(allowed, 2)
    return errors.UpstreamTimeout(
        f"{host} did not answer within {seconds:g} s ({tries} attempt{'s' if tries != 1 else ''}).",
        details={"timeout_seconds": seconds, "attempts": tries},
    )


def _constant(value: bytes) -> Fetch:
    async def fetch() -> bytes:
        return value

    return fetch


def cache_key(url: str, render: RenderMode = "auto") -> str:
    """The cache key of a page: a hash of its URL without the fragment (the key never holds the URL itself), and
    the render mode unless ``auto`` (``never`` and ``always`` may give another document for the same URL)."""
    bare = url.split("#", 1)[0]
    mode = "" if render == "auto" else f":{render}"
    return CACHE_PREFIX + hashlib.sha256(bare.encode("utf-8", "surrogatepass")).hexdigest() + mode


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
