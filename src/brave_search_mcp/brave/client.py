"""The one door to Brave: headers, admission, retry, cache, body cap and error mapping live here.

Every request carries the key in a header only (never in the URL, a message or a log line).
A call first looks in the cache; otherwise one upstream fetch is shared by identical concurrent
calls, and each attempt of that fetch (GET or streamed POST alike) passes its family's one admission
(quota gate, spending cap, the queue shared by every process of the key), is bounded by the per-attempt
timeout (body included) and by the byte cap, and is retried only when a later try can succeed
(DESIGN.md, "Resilience rules"). Brave's error JSON becomes a typed ``BraveSearchError``.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import anyio
import httpx2

from brave_search_mcp.brave.answers_stream import answer_payloads
from brave_search_mcp.brave.counters import EndpointCounters
from brave_search_mcp.brave.facts import ENDPOINT_NAMES, MESSAGE_CAP_CHARS, MISSING_KEY_MESSAGE, USER_AGENT, Endpoint
from brave_search_mcp.brave.limits import BraveLimits, brave_limits
from brave_search_mcp.brave.responses import BraveResponse as BraveResponse
from brave_search_mcp.brave.responses import Fetched
from brave_search_mcp.brave.shared_state import SharedUpstream, upstream_id
from brave_search_mcp.brave.wire import map_error, parse_rate_limit
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from brave_search_mcp.observe import Observer
from brave_search_mcp.ratelimit.admission import Admission, Ticket
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.state.memory import MemoryBackend
from brave_search_mcp.state.response_cache import (
    FRESHNESS_TTL_SECONDS,
    CacheStats,
    ResponseCache,
    is_freshness_filtered,
    make_key,
)
from brave_search_mcp.upstream.bodies import decode_json_object, read_capped_gzip, read_error_body
from brave_search_mcp.upstream.retry import RetryPolicy
from brave_search_mcp.upstream.retrying import Retrier
from brave_search_mcp.upstream.sent import Sent
from brave_search_mcp.upstream.transport_errors import typed_transport_errors

logger = logging.getLogger(__name__)


Params = Sequence[tuple[str, str]]
Headers = tuple[tuple[str, str], ...]  # extra request headers (Brave's X-Loc-* location), part of the cache key


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
        shared: SharedUpstream | None = None,
        limits: BraveLimits | None = None,
    ) -> None:
        self._settings = settings
        self._transport = transport
        self.clock = clock  # the one clock the client stamps and throttles with (the service shares it)
        self.sleep = sleep  # the one sleep it waits with (the service's summarizer polling shares it)
        policy = RetryPolicy(settings.retries, settings.retry_base_ms / 1000.0, settings.retry_max_ms / 1000.0)
        self._retrier = Retrier(policy, clock=clock, sleep=sleep, rng=rng)  # every GET's and POST's tries
        self._http: httpx2.AsyncClient | None = None
        self._closed = False
        self._calls: set[anyio.CancelScope] = set()
        if limits is None:  # this process's own numbers, on the client's clock (tests pass a fake one)
            own = MemoryBackend(clock=clock, sleep=sleep, cache_max_entries=0)
            limits = brave_limits(own, settings, upstream=upstream_id(settings.base_url, self._key()), clock=clock)
        self.limits = limits
        self._cache: ResponseCache[Fetched] = ResponseCache(
            settings.cache_size, settings.cache_ttl_seconds, clock=clock
        )
        self._counters: dict[str, EndpointCounters] = {name: EndpointCounters() for name in ENDPOINT_NAMES.values()}
        self._last_rate_limit: RateLimitInfo | None = None
        self._key_echoes = 0
        self._body_ids = itertools.count(1)
        self.shared = shared  # the cross-process cache, when the state backend is shared
        self.observer = Observer()  # the process's metrics and traces (the composition root sets its own)

    async def __aenter__(self) -> BraveClient:
        if self._closed:
            raise errors.Cancelled("The Brave client is closed; create a new one.")
        return self  # the connection pool opens on the first request: start-up pays nothing for it

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
        headers: Headers = (),
    ) -> BraveResponse:
        """GET ``endpoint``; raise a ``BraveSearchError`` on failure. ``deadline`` (client clock) fails fast waits
        Brave demands that cannot end before it (``RATE_LIMITED``); ``retries`` overrides the configured count."""
        endpoint = Endpoint(endpoint)
        counters = self._counters[ENDPOINT_NAMES[endpoint]]
        try:
            if self._closed:
                raise errors.Cancelled("The Brave client is closed.")
            scope = anyio.CancelScope()
            self._calls.add(scope)
            try:
                with scope:
                    response = await self._get(endpoint, list(params), use_cache, throttle, retries, deadline, headers)
                    counters.last = "ok"
                    return response
            finally:
                self._calls.discard(scope)
            raise errors.Cancelled("The Brave client was closed while the call was in flight.")
        except errors.BraveSearchError as exc:
            counters.count_error(exc.code.value)
            raise

    @property
    def last_rate_limit(self) -> RateLimitInfo | None:
        """The most recent rate-limit figures seen on any answer (success or error)."""
        return self._last_rate_limit

    def cache_stats(self) -> CacheStats:
        """Current cache figures."""
        return self._cache.stats()

    def counters(self) -> dict[str, EndpointCounters]:
        """Per-endpoint counters keyed by the endpoint's short name (web, news, images, videos, summarizer...)."""
        return {name: replace(c, by_code=dict(c.by_code)) for name, c in self._counters.items()}

    @property
    def key_echoes(self) -> int:
        """How many successful bodies contained the API key (the service then scrubs its output)."""
        return self._key_echoes

    async def admission(self) -> dict[str, Any]:
        """The rate in force, the learned plan, pauses, the quota gate and the month's requests (status tool)."""
        return await self.limits.snapshot()

    @property
    def throttle_rate(self) -> tuple[float | None, int | None]:
        """The search family's (requests per second, how many may start together) by the plan last seen (None: not
        learned); while the rate is penalised the second number is the spread's."""
        limits = self.limits.search.limiter.at_once()
        return (None, None) if limits is None else limits

    # -- one call -------------------------------------------------------------------------------

    def open_pool(self) -> None:
        """Make the connection pool now: an HTTP replica does before it takes calls, so its first request does not
        pay the TLS set-up (tens of milliseconds of CPU) in a burst; stdio start-up stays lean."""
        self._open()

    def _open(self) -> httpx2.AsyncClient:
        """httpx2's pooled HTTP/1.1 client, made on the first request.

        trust_env: httpx2 reads HTTP(S)_PROXY, ALL_PROXY, NO_PROXY and SSL_CERT_FILE / SSL_CERT_DIR, the corporate
        network conventions (tests/test_proxies.py, README). Every phase (connect, write, each read, waiting for a
        pooled connection) has the attempt timeout; ``_attempt`` also bounds the whole attempt by it. No HTTP/2:
        nothing here can measure that it helps (Brave is out of reach; the fakes speak HTTP/1.1). A closed client
        opens none: a pool made after ``aclose`` would never be closed.
        """
        if self._closed:
            raise errors.Cancelled("The Brave client is closed.")
        if self._http is None:
            self._http = httpx2.AsyncClient(
                transport=self._transport,
                trust_env=True,
                timeout=httpx2.Timeout(self._settings.timeout_seconds),
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
        return clean_text(text, limit=limit, markup=False)

    def _url(self, endpoint: Endpoint, params: Params) -> httpx2.URL:
        """A GET's URL, built before admission: one httpx2 refuses is refused before anything is counted."""
        try:
            return httpx2.URL(self._settings.base_url.rstrip("/") + endpoint.value, params=list(params))
        except (httpx2.InvalidURL, TypeError, ValueError) as exc:
            message = f"The request could not be encoded as a URL ({self._safe(str(exc), 120)})."
            raise errors.InvalidArgument(message) from None

    async def _get(
        self,
        endpoint: Endpoint,
        params: Params,
        use_cache: bool,
        throttle: bool,
        retries: int | None,
        deadline: float | None,
        headers: Headers = (),
    ) -> BraveResponse:
        """One GET's whole path: the cache, else one fetch (shared by the processes asking at once) whose every
        attempt passes admission and is settled, whatever it ends in."""
        if not self._settings.has_key:
            raise errors.MissingApiKey(MISSING_KEY_MESSAGE)
        name = ENDPOINT_NAMES[endpoint]
        counters, admission = self._counters[name], self.limits.of(endpoint)
        started = self.clock()
        key = make_key(endpoint.value, [*params, *((f"header:{k.lower()}", v) for k, v in headers)])
        sent = 0

        async def one_attempt(url: httpx2.URL) -> Fetched:
            nonlocal sent
            with self.observer.span("state admit", endpoint=name):
                ticket = await admission.admit(deadline, queue=throttle)  # a refusal sends nothing
            answered = False
            try:
                sent += 1
                counters.requests += 1
                fetched = await self._attempt(endpoint, url, sent, headers, admission, ticket)
                answered = True
                return fetched
            finally:
                with self.observer.span("state settle", endpoint=name):
                    await admission.settle(ticket, answered=answered)

        async def upstream() -> Fetched:
            url = self._url(endpoint, params)
            try:
                fetched = await self._retrier.run(lambda: one_attempt(url), deadline=deadline, retries=retries)
            except errors.BraveSearchError as exc:
                exc.details.setdefault("attempts", sent)
                raise
            return replace(fetched, attempts=sent)

        async def fetch() -> Fetched:
            fetched = await (self._shared_fetch(key, upstream) if self.shared and use_cache else upstream())
            return replace(fetched, body_id=next(self._body_ids))

        fetched, hit, _shared = await self._cache.get_or_fetch(key, fetch, bypass=not use_cache)
        if hit:
            counters.cache_hits += 1
        # Hits and shared answers hand out the same decoded body: it is read-only by contract.
        return BraveResponse(
            data=fetched.data,
            status=fetched.status,
            cached=hit or fetched.attempts == 0,  # a local hit, or an answer another process fetched
            attempts=0 if hit else fetched.attempts,
            duration_ms=max(0.0, (self.clock() - started) * 1000.0),
            request_target=(self._settings.base_url.rstrip("/") + endpoint.value, tuple(params)),
            body_bytes=fetched.body_bytes,
            rate_limit=(self._last_rate_limit or fetched.rate_limit) if hit else fetched.rate_limit,
            raw_body=fetched.raw_body,
            body_id=fetched.body_id,
        )

    async def stream_post(
        self,
        endpoint: Endpoint,
        body: dict[str, Any],
        *,
        deadline: float | None = None,
        on_send: Callable[[], None] | None = None,
    ) -> AsyncIterator[str]:
        """POST ``body``; yield each server-sent event's data as it comes (a blocking JSON answer: its body, once).

        Admitted like a GET, never cached. Only a 429 is retried (Brave did nothing and bills nothing for it);
        ``on_send`` is told of every request that goes out. An event or a stream over its cap ends it with
        ``UPSTREAM_ERROR`` (``answers_stream.answer_payloads``).
        """
        if not self._settings.has_key:
            raise errors.MissingApiKey(MISSING_KEY_MESSAGE)
        name = ENDPOINT_NAMES[endpoint]
        counters, admission = self._counters[name], self.limits.of(endpoint)
        timeout = self._settings.timeout_seconds
        headers = self._headers() | {"Accept": "text/event-stream", "Content-Type": "application/json"}
        url = httpx2.URL(self._settings.base_url.rstrip("/") + endpoint.value)
        sent = 0

        async def open_stream() -> httpx2.Response:
            nonlocal sent
            if self._closed:  # as for a GET: a closed client sends nothing (and opens no pool nobody would close)
                raise errors.Cancelled("The Brave client is closed.")
            with self.observer.span("state admit", endpoint=name):
                ticket = await admission.admit(deadline)
            answered, request = False, self.observer.request("brave", name, self.clock)
            try:
                http = self._open()  # the client may have closed while the call waited its turn
                sent += 1
                counters.requests += 1  # counted like a GET: the status tool's "plan seen" reads the last outcome
                if on_send is not None:
                    on_send()
                with request, typed_transport_errors("Brave", timeout, self._safe):  # an error body can fail too
                    with anyio.fail_after(timeout):  # until the answer starts; then each chunk has the read timeout
                        left = Sent(self.clock, lambda at: admission.left(ticket, at))
                        post = http.build_request("POST", url, headers=headers, json=body, extensions=left.extensions)
                        response = await http.send(post, stream=True)
                    request.status = response.status_code
                    sent_at = left.at_or(request.started)  # Brave counts it from then
                    try:  # whatever fails from here on (a refusal, a cancellation) closes the response
                        if not 200 <= response.status_code < 300:
                            await self._handle(endpoint, response, admission, sent_at, ticket)  # raises
                        await self._observe(response, admission, sent_at, ticket)
                        await admission.succeeded()
                    except BaseException:
                        with anyio.CancelScope(shield=True):
                            await response.aclose()
                        raise
                answered = True
                return response
            except (errors.UpstreamTimeout, errors.NetworkError):
                await admission.failed()
                raise
            finally:
                with self.observer.span("state settle", endpoint=name):
                    await admission.settle(ticket, answered=answered)

        try:
            response = await self._retrier.run(open_stream, deadline=deadline, rate_limited_only=True)
            try:
                counters.last = "ok"
                with typed_transport_errors("Brave", timeout, self._safe):
                    async for payload in answer_payloads(response, self._settings.max_response_bytes):
                        yield payload
            finally:
                await response.aclose()
        except errors.BraveSearchError as exc:
            exc.details.setdefault("attempts", sent)
            counters.count_error(exc.code.value)
            raise

    async def _shared_fetch(self, key: str, upstream: Callable[[], Awaitable[Fetched]]) -> Fetched:
        """Through the shared cache: one fetch for every process asking at once; a shared hit costs no request."""
        assert self.shared is not None
        ttl = min(
            self._settings.cache_ttl_seconds, FRESHNESS_TTL_SECONDS if is_freshness_filtered(key) else float("inf")
        )
        with self.observer.span("state shared cache"):
            return await self.shared.answer(key, upstream, ttl, self._settings.max_response_bytes)

    # -- one attempt ----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {
            "X-Subscription-Token": self._key(),
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            "User-Agent": USER_AGENT,
        }

    async def _attempt(
        self,
        endpoint: Endpoint,
        url: httpx2.URL,
        attempt: int,
        extra_headers: Headers,
        admission: Admission,
        ticket: Ticket,
    ) -> Fetched:
        http = self._open()
        timeout = self._settings.timeout_seconds
        request = self.observer.request("brave", ENDPOINT_NAMES[endpoint], self.clock)
        try:
            with request, typed_transport_errors("Brave", timeout, self._safe), anyio.fail_after(timeout):
                left = Sent(self.clock, lambda at: admission.left(ticket, at))  # the window counts it from then
                headers = self._headers() | dict(extra_headers)
                get = http.build_request("GET", url, headers=headers, extensions=left.extensions)
                response = await http.send(get, stream=True)
                try:
                    request.status = response.status_code
                    sent_at = left.at_or(request.started)
                    return await self._handle(endpoint, response, admission, sent_at, ticket)
                finally:
                    await response.aclose()
        except errors.BraveSearchError:
            if request.status is None:  # no answer at all (timeout, network): nothing learned, a pending probe is freed
                await admission.failed()
            raise
        finally:
            status = "-" if request.status is None else request.status
            message = "brave request endpoint=%s attempt=%d status=%s outcome=%s duration_ms=%.1f"
            logger.debug(message, ENDPOINT_NAMES[endpoint], attempt, status, request.outcome, request.seconds * 1e3)

    async def _observe(
        self, response: httpx2.Response, admission: Admission, sent_at: float, ticket: Ticket
    ) -> RateLimitInfo | None:
        """What an answer's rate-limit headers say (a success's, a refusal's or a stream's), told to its admission
        with the ticket its request went out on (whether its start filled the window as the store counts it)."""
        info = parse_rate_limit(response.headers, sent_at)  # Brave counted the request as it arrived, not answered
        if info is not None:
            self._last_rate_limit = info
            await admission.observe(info, limited=response.status_code == 429, ticket=ticket)
        return info

    async def _handle(
        self, endpoint: Endpoint, response: httpx2.Response, admission: Admission, sent_at: float, ticket: Ticket
    ) -> Fetched:
        status = response.status_code
        info = await self._observe(response, admission, sent_at, ticket)
        if 200 <= status < 300:
            body, wire = await read_capped_gzip(response, self._settings.max_response_bytes)
            key = self._key()
            if key and key.encode() in body:  # e.g. an agent put the key in its query and Brave echoed it
                self._key_echoes += 1
            await admission.succeeded()
            return Fetched(
                data=decode_json_object(body),
                status=status,
                attempts=1,
                body_bytes=len(body),
                raw_body=body,
                rate_limit=info,
                wire=wire,
            )
        body = await read_error_body(response)
        error = map_error(
            endpoint, response.status_code, response.reason_phrase, response.headers, body, info, self._safe
        )
        await admission.refused(error)
        raise error
