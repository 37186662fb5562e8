"""A deterministic stand-in for SearXNG's JSON API, so the SearXNG provider is tested offline.

It behaves like a real instance as measured (shared reference searxng.md; team notes searxng-real.md):
GET and form POST on ``/search`` (form values win; ``/`` with a query redirects 308 to ``/search``); 400
``{"error": …}`` for a missing or empty ``q``, a bad ``pageno``/``safesearch``/``language``/``time_range``
(but a blank ``q`` is searched, ``safesearch=01`` is 1, ``time_range=None`` is none); 403 HTML for
``format=json`` with JSON output off and for ``csv``/``rss``; any other format gets the HTML page. The query
syntax of ``syntax.py`` (``!!bang`` → 302 off the instance, ``!engine``/``!category``, ``:lang``, ``<N``;
the answer's ``query`` is the cleaned text); ``site:`` / ``-site:`` operators honoured by the engines
(``results.py``); several categories merged; pages of the instance's own size
with equal-score pairs whose order flips between identical requests; videos; and, when told to, a real
instance's bad days: the bot limiter of ``limiter.py`` (15 requests in 20 s per client, 429 beyond), the
engines of some categories failing (blocked or CAPTCHA'd: 200, no results, the engines unresponsive, then
"Suspended: …" while SearXNG benches them) while the others answer, engines that do not page (every page
repeats page 1), and a hang (``kill -STOP``: the request is taken and never answered). Behaviour is set by
explicit attributes and methods (``json_enabled``, ``fail_next``, ``unresponsive``, ``failing``,
``repeat_first_page``, ``hanging``, ``limiter``…), never by words in the query. Every request is recorded,
with what the engines were asked.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import httpx2

from .limiter import BotLimiter
from .results import page_of
from .syntax import ENGINES, TIME_RANGES, ParsedQuery, invalid_parameter, parse_query

__all__ = ["ENGINES", "FakeSearxng", "RecordedRequest", "Reply"]

_FORBIDDEN_HTML = (
    b"<!doctype html> <html lang=en> <title>403 Forbidden</title> <h1>Forbidden</h1> <p>You don&#39;t have the "
    b"permission to access the requested resource. It is either read-protected or not readable by the server.</p>"
)


@dataclass
class RecordedRequest:
    """One request as the fake saw it: its parameters (form over URL, first value wins), lower-cased headers,
    and for an answered search what the engines were asked (query, categories, language, safe search)."""

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    status: int = 0
    url_params: dict[str, str] = field(default_factory=dict)
    engine_query: str | None = None
    engine_categories: list[str] = field(default_factory=list)
    engine_language: str | None = None
    engine_safesearch: int | None = None


@dataclass
class Reply:
    """What the fake answers; the MockTransport and the real server both render it."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay: float = 0.0
    hang: bool = False  # never answered: the instance is stopped


def _json(status: int, obj: Any, delay: float = 0.0) -> Reply:
    return Reply(status, json.dumps(obj).encode(), [("Content-Type", "application/json")], delay)


def _html(status: int, body: bytes, delay: float = 0.0) -> Reply:
    return Reply(status, body, [("Content-Type", "text/html; charset=utf-8")], delay)


def _redirect(status: int, location: str, delay: float = 0.0) -> Reply:
    reply = _html(status, b"<!doctype html> <title>Redirecting...</title> <h1>Redirecting...</h1>", delay)
    reply.headers.append(("Location", location))
    return reply


def _first_wins(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


class FakeSearxng:
    """SearXNG's ``/search`` endpoint as pure logic: ``handle()`` turns a request into a ``Reply``."""

    def __init__(self, *, results_per_page: int = 27, pages: int = 3, auth: tuple[str, str] | None = None) -> None:
        self.results_per_page = results_per_page  # the instance's own page size (27 on the measured one)
        self.pages = pages  # pages that have results; later pages are empty (0 = nothing ever found)
        self.auth = auth  # (user, password) a proxy in front of the instance demands, or None
        self.json_enabled = True  # settings.yml search.formats includes json
        self.default_safesearch = 0  # settings.yml search.safe_search: what applies when none is sent
        self.unstable_order = True  # equal-score results come back in another order on every other search
        self.unresponsive: list[tuple[str, str]] = []  # engines reported as failed next to the results
        self.all_engines_fail = False  # every engine fails: 200, no results, all engines unresponsive
        self.failing: dict[str, str] = {}  # category -> why its engines fail ("CAPTCHA", "HTTP error"); others answer
        self.repeat_first_page = False  # engines that do not page: every pageno answers page 1's results
        self.hanging = False  # the instance is stopped (kill -STOP): requests are taken and never answered
        self.delay_seconds = 0.0  # wait before answering (the real server waits on real time)
        self.legacy = False  # an older build: number_of_results sent, answers as plain strings
        self.limiter: BotLimiter | None = None  # set (see enable_limiter) to act as a limiter-enabled instance
        self.answers: list[Any] = []
        self.infoboxes: list[dict[str, Any]] = []
        self.suggestions: list[str] = []
        self.corrections: list[str] = []
        self.extra_results: list[Any] = []  # put first on page 1, exactly as given
        self.requests: list[RecordedRequest] = []
        self._failures: deque[int] = deque()
        self._searches = 0
        self._benched: set[str] = set()  # engines that failed once: SearXNG reports them "Suspended: …" after
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ controls

    def fail_next(self, status: int, times: int = 1) -> None:
        """Answer the next ``times`` searches with ``status`` (an HTML error page, as a proxy would send)."""
        with self._lock:
            self._failures.extend([status] * times)

    def enable_limiter(self, *, public_instance: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        """Act as an instance with ``server.limiter: true`` (or ``public_instance: true``: link-token mode)."""
        self.limiter = BotLimiter(public_instance=public_instance, clock=clock)

    def search_requests(self) -> list[RecordedRequest]:
        """Recorded requests to ``/search`` only."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/search")]

    def pages_asked(self) -> list[int]:
        """The ``pageno`` of every search the engines ran, in order (a cached page is not asked again)."""
        return [int(r.params.get("pageno", "1")) for r in self.search_requests() if r.engine_query is not None]

    # ------------------------------------------------------------------ the API

    def handle(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        headers: Mapping[str, str],
        form: Sequence[tuple[str, str]] = (),
        client: str = "127.0.0.1",
    ) -> Reply:
        """Answer one request from ``client`` (an address; ``X-Forwarded-For`` names it instead, as SearXNG reads
        it behind its trusted local proxy) the way a SearXNG instance configured like this fake would."""
        url_params = _first_wins(params)
        merged = {**url_params, **_first_wins(form)}
        lowered = {k.lower(): v for k, v in headers.items()}
        record = RecordedRequest(method.upper(), path, merged, lowered, url_params=url_params)
        client = lowered.get("x-forwarded-for", client).split(",")[0].strip() or client
        with self._lock:
            self.requests.append(record)
            reply = Reply(0, b"", hang=True) if self.hanging else self._dispatch(record, client)
        record.status = reply.status
        return reply

    def _dispatch(self, req: RecordedRequest, client: str) -> Reply:
        delay = self.delay_seconds
        if req.path == "/healthz":
            return Reply(200, b"OK", [("Content-Type", "text/plain; charset=utf-8")], delay)
        if req.path in ("", "/") and "q" in req.params:
            query = "" if req.method == "POST" else "?" + urlencode(req.url_params)
            return _redirect(308, "/search" + query, delay)
        if not req.path.endswith("/search"):
            return _html(404, b"<html><body><h1>Not Found</h1></body></html>", delay)
        if req.method not in ("GET", "POST", "HEAD"):
            reply = _html(405, b"<html><body><h1>Method Not Allowed</h1></body></html>", delay)
            reply.headers.append(("Allow", "HEAD, GET, OPTIONS, POST"))
            return reply
        if self.auth is not None and req.headers.get("authorization") != self._basic(*self.auth):
            reply = _html(401, b"<html><body>Unauthorized</body></html>", delay)
            reply.headers.append(("WWW-Authenticate", 'Basic realm="searxng"'))
            return reply
        if self._failures:
            status = self._failures.popleft()
            return _html(status, f"<html><body><h1>Error {status}</h1></body></html>".encode(), delay)
        if self.limiter is not None:
            refused = self.limiter.check(req.headers, req.url_params, client)
            if refused is not None:
                host = req.headers.get("host", "localhost")
                return (
                    _redirect(302, f"http://{host}/", delay)
                    if refused[0] == 302
                    else _html(429, b"Too Many Requests", delay)
                )
        return self._search(req, delay)

    def _search(self, req: RecordedRequest, delay: float) -> Reply:
        fmt = req.params.get("format", "html")
        if fmt in ("csv", "rss") or (fmt == "json" and not self.json_enabled):
            return _html(403, _FORBIDDEN_HTML, delay)  # not in search.formats: checked before anything else
        if fmt != "json":
            return _html(200, b"<html><body>results page</body></html>", delay)
        if not req.params.get("q"):
            return _json(400, {"error": "No query"}, delay)
        problem = invalid_parameter(req.params)
        if problem:
            return _json(400, {"error": problem}, delay)
        parsed = parse_query(req.params["q"])
        location = parsed.redirect()
        if location is not None:
            return _redirect(302, location, delay)  # an external bang: even with format=json
        return _json(200, self._answer(req, parsed), delay)

    def _why(self, engine: str, reason: str) -> str:
        """An engine's failure as SearXNG reports it: the reason, then "Suspended: reason" while it is benched."""
        if engine in self._benched:
            return f"Suspended: {reason}"
        self._benched.add(engine)
        return reason

    @staticmethod
    def _basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def _language(self, req: RecordedRequest, parsed: ParsedQuery) -> str:
        """``:xx`` in the query, else ``language=``, else the ``Accept-Language`` header, else all."""
        if parsed.languages:
            return parsed.languages[-1]
        language = req.params.get("language", "auto")
        if language != "auto":
            return language
        header = req.headers.get("accept-language", "").split(",")[0].split(";")[0].strip()
        return header if header and parse_query(":" + header).languages else "all"

    def _answer(self, req: RecordedRequest, parsed: ParsedQuery) -> dict[str, Any]:
        params = req.params
        asked = [c.strip() for c in params.get("categories", "general").split(",")]
        categories = [c for c in asked if c in ENGINES] or ["general"]  # unknown names are ignored
        if parsed.categories or parsed.engines:  # a !category / !engine token overrides categories=
            chosen = [*parsed.categories, *(c for c, names in ENGINES.items() for e in parsed.engines if e in names)]
            categories = list(dict.fromkeys(chosen))
        page = int(params.get("pageno", "1"))
        req.engine_query, req.engine_categories = parsed.query, categories
        req.engine_language = self._language(req, parsed)
        req.engine_safesearch = int(params.get("safesearch", self.default_safesearch))
        self._searches += 1
        unresponsive = [list(pair) for pair in self.unresponsive]
        results: list[Any] = []
        failing = dict.fromkeys(categories, "timeout") if self.all_engines_fail else self.failing
        answering = [c for c in categories if c not in failing]
        for category in (c for c in categories if c in failing):
            unresponsive += [[engine, self._why(engine, failing[category])] for engine in ENGINES[category]]
        page = 1 if self.repeat_first_page else page
        if page <= self.pages:
            per_page = self.results_per_page
            if params.get("time_range") in TIME_RANGES:
                per_page = max(1, per_page // 2)  # engines without time-range support are skipped
            only = parsed.engines[0] if len(parsed.engines) == 1 else None
            swap = self.unstable_order and self._searches % 2 == 0
            for category in answering:
                results += page_of(parsed.query, category, page, per_page, only_engine=only, swap_ties=swap)
        if page == 1 and answering:
            results = [*self.extra_results, *results]
        answers: list[Any] = [a if not self.legacy else a.get("answer", "") for a in self.answers]
        body: dict[str, Any] = {
            "query": parsed.query,
            "results": results,
            "answers": answers,
            "corrections": list(self.corrections),
            "infoboxes": list(self.infoboxes),
            "suggestions": list(self.suggestions),
            "unresponsive_engines": sorted(unresponsive),
        }
        if self.legacy:
            body["number_of_results"] = 0
        return body

    # ------------------------------------------------------------------ as an httpx2 transport

    def reply_to(self, request: httpx2.Request) -> Reply:
        """Answer an httpx2 request (a form body is read as POST fields)."""
        form = parse_qsl(request.content.decode("latin-1"), keep_blank_values=True) if request.content else []
        params = list(request.url.params.multi_items())
        return self.handle(request.method, request.url.path, params, dict(request.headers), form)

    def mock_transport(self, *, sleep: Callable[[float], Awaitable[None]] | None = None) -> httpx2.MockTransport:
        """An httpx2 transport backed by this fake, for unit tests without sockets (async clients). A hanging
        instance keeps the request until the client's read timeout, waited on ``sleep`` (a fake clock's, so no
        test waits on real time), and then times out as a socket would; without ``sleep`` it waits for ever."""

        async def handler(request: httpx2.Request) -> httpx2.Response:
            reply = self.reply_to(request)
            if reply.hang:
                timeouts = request.extensions.get("timeout") or {}
                await (sleep(float(timeouts.get("read") or 5.0)) if sleep is not None else anyio.sleep_forever())
                raise httpx2.ReadTimeout("the instance took the request and never answered", request=request)
            if reply.delay > 0:
                await anyio.sleep(reply.delay)
            return httpx2.Response(reply.status, headers=reply.headers, content=reply.body, request=request)

        return httpx2.MockTransport(handler)

    def sync_transport(self) -> httpx2.MockTransport:
        """The same for a synchronous ``httpx2.Client`` (no delays)."""

        def handler(request: httpx2.Request) -> httpx2.Response:
            reply = self.reply_to(request)
            if reply.hang:
                raise httpx2.ReadTimeout("the instance took the request and never answered", request=request)
            return httpx2.Response(reply.status, headers=reply.headers, content=reply.body, request=request)

        return httpx2.MockTransport(handler)
