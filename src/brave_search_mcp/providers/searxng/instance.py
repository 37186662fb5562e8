"""One SearXNG instance over HTTP: its settings, and form POSTs that are paced, retried and held to a call's time.

Speaks SearXNG's JSON API as real instances answer it (team notes, searxng-real.md): a form ``POST
{base}/search`` (a GET with ``format=json`` in the URL counts against the bot limiter's 4 API requests
an hour; the form does not), with headers the limiter lets through (``Accept`` admitting text/html,
``Accept-Language``, gzip), redirects never followed. Retries, transport errors, capped bodies and JSON
decoding are the ones every upstream client shares (``upstream/``).

Time: everything one search call spends on the instance — every page, attempt and wait between attempts — fits
in ``timeout`` seconds (``BRAVE_SEARCH_SEARXNG_TIMEOUT_SECONDS``), so a hung instance ends the call, and lets a
fallback provider answer, within it; a timeout is not retried (the next try would hang as well). Waiting for the
instance's pace is not time on it: that wait is bounded by the call's deadline alone.

Pace: at most ``rate`` request starts in any ``rate_window`` seconds, in the state backend's limiter (shared by
the user's processes). A 429 from the instance's bot limiter is not a failure but a pace to learn (``pace``):
the call adopts a slower plan and tries again at it, within its deadline, a few times; when the pace leaves no
start before the deadline it says how long to wait (``retry_after_ms``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import httpx2

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import Clock, Sleep, moved
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    BraveSearchError,
    ParseError,
    ProviderMisconfigured,
    RateLimited,
    RefusedBeforeSending,
    UpstreamTimeout,
    WarningCode,
)
from brave_search_mcp.observe import Observer, Sent
from brave_search_mcp.providers.searxng.pace import MAX_LIMITED_TRIES, WAIT_WORTH_SAYING_SECONDS, pace_text, slower
from brave_search_mcp.providers.searxng.results import PROVIDER_NAME
from brave_search_mcp.providers.searxng.statuses import probe_outcome, redirect_error, status_error
from brave_search_mcp.ratelimit.limiter import Limiter, SlotUnavailable
from brave_search_mcp.ratelimit.plan import EXACT
from brave_search_mcp.render.text import clean_text, seconds_text
from brave_search_mcp.state.memory import memory_limiter
from brave_search_mcp.upstream.bodies import read_capped, read_error_body
from brave_search_mcp.upstream.retry import RetryPolicy, start_margin
from brave_search_mcp.upstream.retrying import Retrier
from brave_search_mcp.upstream.transport_errors import typed_transport_errors

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "NOT_JSON_HINT", "CallBudget", "Instance", "SearxngConfig"]

DEFAULT_TIMEOUT_SECONDS = 8.0  # a searxng,brave chain has Brave's answer within ~10 s of a hung instance
NOT_JSON_HINT = "Check that the SearXNG base URL points at SearXNG itself."
TIMEOUT_SETTING = "BRAVE_SEARCH_SEARXNG_TIMEOUT_SECONDS"
# What a bot limiter wants to see (searx/botdetection): text/html accepted, a language, compression.
_ACCEPT = "application/json, text/html;q=0.1"


def _default_user_agent() -> str:
    return f"brave-search-mcp/{__version__} (SearXNG provider)"


@dataclass(frozen=True)
class SearxngConfig:
    """Everything needed to talk to one SearXNG instance; built by the composition root from Settings."""

    base_url: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS  # a call's whole time on the instance, attempts included
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
        at most ``rate`` starts per ``rate_window``, exactly, until its bot limiter teaches a slower pace."""
        return make(name, rate=self.rate / self.rate_window, burst=self.rate, margin=EXACT, label="SearXNG")

    @property
    def search_url(self) -> str:
        """``{base}/search``; a base with a path prefix (``https://host/searx``) or a query keeps it."""
        parts = urlsplit(self.base_url)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/search", fragment=""))

    def shown_url(self, fields: Mapping[str, str] | None = None) -> str:
        """The search URL for debug output and status (with ``fields``, as a GET): no user name or password, the
        base's own query values (an instance token, perhaps) hidden."""
        parts = urlsplit(self.search_url)
        host = parts.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
        own = [(key, "[redacted]") for key, _ in parse_qsl(parts.query, keep_blank_values=True)]
        return urlunsplit((parts.scheme, netloc, parts.path, urlencode([*own, *(fields or {}).items()]), ""))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values no message may show: the password (also one in the base URL) and every header value."""
        in_url = urlsplit(self.base_url).password
        return tuple(s for s in (self.password, in_url, *self.headers.values()) if s)


@dataclass
class CallBudget:
    """One search call's dealings with the instance: when its time on it ends (moved on by waits for the pace),
    the requests it sent, the pages the cache answered and the 429s it sat out."""

    ends: float
    attempts: int = 0
    cache_hits: int = 0
    limited: int = 0
    waited: float = 0.0  # seconds spent waiting for others' turns or the instance's 429 (not time on the instance)
    ahead: int = 0  # the most searches queued ahead of it at once
    request_url: str | None = None

    @property
    def cached(self) -> bool:
        """Whether every page came from the cache (no request was sent)."""
        return self.attempts == 0


class Instance:
    """The HTTP side of the provider: one pooled client, the instance's limiter, the shared retry rule."""

    def __init__(
        self,
        config: SearxngConfig,
        *,
        transport: httpx2.AsyncBaseTransport | None,
        clock: Clock,
        sleep: Sleep,
        limiter: Limiter | None,
        observer: Observer | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self.observer = observer or Observer()  # counts and traces each request (observe.py)
        # the composition root hands in the state backend's limiter (shared by processes, its clock); alone, the
        # provider queues in one of its own on its clock
        self.limiter = limiter or config.queue(partial(memory_limiter, clock=clock, sleep=sleep), "searxng")
        policy = RetryPolicy(config.retries, max_seconds=2.0, retry_rate_limited=False)
        self._retrier = Retrier(policy, clock=clock, sleep=sleep)
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

    def budget(self) -> CallBudget:
        """A new call's time on the instance, starting now."""
        return CallBudget(self._clock() + self.config.timeout)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def pace(self) -> dict[str, Any]:
        """The pace in force (learned from the instance's 429s, in the shared state), for the status tool."""
        return await self.limiter.snapshot()

    async def fetch(self, fields: dict[str, str], deadline: float | None, budget: CallBudget) -> bytes:
        """One page's body: retried while it can help and time is left; the bot limiter's 429 slows the pace."""
        try:
            for _ in range(MAX_LIMITED_TRIES):
                try:
                    attempt = partial(self._paced_attempt, fields, deadline, budget)
                    return await self._retrier.run(attempt, deadline=self._end(deadline, budget))
                except SlotUnavailable as exc:
                    raise self._booked(exc, budget) from None
                except RateLimited as exc:  # the instance's bot limiter: learn its pace, then try at it
                    budget.limited += 1
                    slowed = partial(slower, now=self.limiter.clock(), retry_after=exc.retry_after)
                    with self.observer.span("state pace", provider=PROVIDER_NAME):
                        await self.limiter.change(slowed)
                    if budget.limited >= MAX_LIMITED_TRIES:  # the call's 429s, over all its pages
                        break
            raise self._still_limited(budget)
        except BraveSearchError as exc:
            exc.details.setdefault("provider", PROVIDER_NAME)
            exc.details.setdefault("attempts", budget.attempts)
            raise

    async def probe(self, *, deadline: float | None = None) -> dict[str, Any]:
        """Is there a SearXNG with JSON output at the base URL? One form POST with only ``format=json``: it
        queries no engine, and the instance answers 400 "No query" with JSON on, 403 with JSON off."""
        started = time.perf_counter()
        entry: dict[str, Any] = {"provider": PROVIDER_NAME, "endpoint": "/search"}
        try:
            await self.limiter.acquire(deadline=self._on_limiter_clock(deadline))
            budget = self.budget()
            timeout = self._time_left(deadline, budget)
            with self._request(timeout) as answer:
                response = await self._client.post(self.config.search_url, data={"format": "json"})
                answer.status = response.status_code
        except BraveSearchError as exc:
            entry.update(ok=False, code=exc.code.value, message=exc.message)
        else:
            ctype = response.headers.get("content-type", "")
            location = response.headers.get("location", "")
            entry.update(probe_outcome(response.status_code, ctype, location, self.config.search_url))
            entry["http_status"] = response.status_code
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return entry

    # ------------------------------------------------------------------------------ one attempt

    def _end(self, deadline: float | None, budget: CallBudget) -> float:
        return budget.ends if deadline is None else min(deadline, budget.ends)

    def _on_limiter_clock(self, deadline: float | None) -> float | None:
        """The last start worth waiting for (a request needs time before the deadline), on the limiter's clock."""
        if deadline is None:
            return None
        return moved(deadline - start_margin(deadline - self._clock()), self._clock, self.limiter.clock)

    def _safe(self, text: str, limit: int) -> str:
        """Library text made fit for a message: the configured password and header values never slip through."""
        for secret in self.config.secrets:
            text = text.replace(secret, "[redacted]")
        return clean_text(text, limit=limit, markup=False)

    def _time_left(self, deadline: float | None, budget: CallBudget) -> float:
        left = self._end(deadline, budget) - self._clock()
        if left <= 0:
            raise self._out_of_time(deadline, budget)
        return left

    def _out_of_time(self, deadline: float | None, budget: CallBudget) -> UpstreamTimeout:
        """The call's time on the instance, or its deadline, ran out (whichever came first)."""
        if deadline is not None and deadline < budget.ends:
            return UpstreamTimeout("SearXNG did not answer before the call's deadline.")
        seconds = self.config.timeout
        return UpstreamTimeout(
            f"SearXNG did not answer within {seconds_text(seconds)}, the most one call may spend on it "
            f"({TIMEOUT_SETTING}).",
            details={"timeout_seconds": seconds, "setting": TIMEOUT_SETTING},
        )

    async def _paced_attempt(self, fields: dict[str, str], deadline: float | None, budget: CallBudget) -> bytes:
        last_start, now = self._on_limiter_clock(deadline), self.limiter.clock()
        budget.ahead = max(budget.ahead, self.limiter.waiting)
        ready = self.limiter.estimate()  # the queue's own estimate, as Brave's admission refuses by it
        if last_start is not None and ready is not None and ready > max(now, last_start):
            raise SlotUnavailable(ready - now, self.limiter.label)
        slowed = self.limiter.waiting > 0 or self._slowed()  # others ahead, or the instance's 429: worth saying
        with self.observer.span("state queue", provider=PROVIDER_NAME):
            waited = (await self.limiter.acquire(deadline=last_start)).waited
        budget.ends += waited  # waiting for the pace is not time on the instance
        budget.waited += waited if slowed else 0.0  # a call's own pages at its own pace are no news
        budget.attempts += 1
        timeout = self._time_left(deadline, budget)
        try:
            return await self._attempt(fields, timeout)
        except UpstreamTimeout:
            if self._clock() >= self._end(deadline, budget) - 0.001:
                raise self._out_of_time(deadline, budget) from None
            raise

    @contextmanager
    def _request(self, timeout: float) -> Iterator[Sent]:
        """One request to the instance within ``timeout``, its transport errors typed; counted and traced once it
        ended, whether the instance answered (``status``), did not (a reset, a timeout: it was sent all the same) or
        the call was cancelled (``observe.Sent``, the rule every provider's requests follow)."""
        sent = self.observer.request(PROVIDER_NAME, "search", self._clock)
        with sent, typed_transport_errors("SearXNG", timeout, self._safe), anyio.fail_after(timeout):
            yield sent

    async def _attempt(self, fields: dict[str, str], timeout: float) -> bytes:
        url = self.config.search_url
        with self._request(timeout) as answer:
            async with self._client.stream("POST", url, data=fields, timeout=timeout) as resp:
                status = answer.status = resp.status_code
                if 300 <= status < 400:
                    raise redirect_error(status, resp.headers.get("location", ""), url)
                if not 200 <= status < 300:
                    raise status_error(status, resp.headers, await read_error_body(resp), self.config.base_url)
                ctype = resp.headers.get("content-type", "")
                body = await read_capped(resp, self.config.max_response_bytes, upstream="SearXNG")
        if "json" not in ctype.lower():  # a login page, the HTML results page, a proxy: not the API
            shown = clean_text(ctype, limit=60) or "no content type"
            raise ParseError(
                f"SearXNG answered {shown}, not JSON. {NOT_JSON_HINT}", details={"provider": PROVIDER_NAME}
            )
        return body

    # ------------------------------------------------------------------------------ the bot limiter

    def _limited(
        self, message: str, wait: float, budget: CallBudget, kind: type[RateLimited] = RateLimited
    ) -> RateLimited:
        wait = max(0.0, wait)
        return kind(
            f"{message} Retry in {wait:.1f} s.",
            status=429,
            retry_after=round(wait, 3),
            details={"retry_after_ms": max(1, math.ceil(wait * 1000)), "limited": budget.limited},
        )

    def _slowed(self) -> bool:
        """Whether the instance's 429 set the pace in force: a slower plan than ours, or its window's hold."""
        limits, plan = self.limiter.in_force(), self.limiter.plan
        own = self.config.rate / self.config.rate_window
        return (limits is not None and limits[0] < own - 1e-9) or plan.blocked_until > self.limiter.clock()

    def _why_slow(self, budget: CallBudget) -> str:
        """Why searches wait for the pace now, and what the pace is."""
        pace = pace_text(self.limiter.in_force())
        if budget.limited:
            return f"SearXNG's bot limiter answered 429 (too many requests) to it; the pace is now {pace}"
        if self._slowed():
            return (
                f"SearXNG's bot limiter answered 429 (too many requests) to an earlier search, so every search waits "
                f"for the slower pace it allows: {pace}"
            )
        if not budget.ahead:
            return f"the requests just sent used up the pace of {pace}"
        many = budget.ahead != 1
        return (
            f"{budget.ahead} other search{'es' if many else ''} {'were' if many else 'was'} queued ahead of it at the "
            f"pace of {pace}"
        )

    def waited(self, budget: CallBudget) -> WarningItem | None:
        """A warning for a call that waited seconds for the pace (how long, why, the pace now), since agents often
        give a call 30 s and a silent wait reads as a hang; None: it did not wait that long."""
        if budget.waited < WAIT_WORTH_SAYING_SECONDS:
            return None
        return WarningItem(
            code=WarningCode.RATE_LIMIT_WAIT,
            message=f"This search spent {seconds_text(budget.waited)} waiting for its turn at SearXNG: "
            f"{self._why_slow(budget)}.",
        )

    def _booked(self, exc: SlotUnavailable, budget: CallBudget) -> BraveSearchError:
        """The pace leaves no start before the deadline: fail now, nothing sent, saying why (the instance's 429, or
        the searches queued ahead) and what the pace is."""
        wait = exc.retry_after or 0.0
        if budget.limited:
            message = (
                "SearXNG's bot limiter answered 429 (too many requests); at the slower pace it allows, the next "
                "request would start after this call's deadline, so nothing more was sent."
            )
        else:
            sent = "nothing more was sent" if budget.attempts else "nothing was sent"  # its earlier pages went
            message = (
                f"This search could not start for {seconds_text(wait)}, past its deadline, so {sent}: "
                f"{self._why_slow(budget)}."
            )
        error = self._limited(message, wait, budget, RefusedBeforeSending)
        error.details["client_side"] = True  # the last word was our queue's: nothing was sent
        return error

    def _still_limited(self, budget: CallBudget) -> RateLimited:
        """429 after 429 although each try waited for a slower pace: an instance stricter than SearXNG's stock."""
        ready = self.limiter.estimate()
        wait = 0.0 if ready is None else ready - self.limiter.clock()
        return self._limited(
            f"SearXNG's bot limiter answered 429 (too many requests) {budget.limited} times although each try waited "
            "for its window to pass; on a private instance set server.limiter: false.",
            wait,
            budget,
        )
