"""A deterministic stand-in for SearXNG's JSON API, so the SearXNG provider is tested offline.

It speaks the API as observed on real instances (shared reference searxng.md): 400 ``{"error": …}``
for a missing query or a bad ``safesearch``/``pageno``, 403 with an HTML body when JSON output is off,
categories general/news/images, ``pageno`` paging, ``time_range`` (fewer results, as engines without
time-range support are skipped), merged results with ``engines``/``positions``/``score``, and
``answers``/``infoboxes``/``suggestions``/``unresponsive_engines``. Behaviour is set by explicit
attributes and methods (``json_enabled``, ``fail_next``, ``unresponsive``, ``all_engines_fail``,
``delay_seconds``…), never by words in the query. Every request is recorded for assertions.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx2

__all__ = ["ENGINES", "FakeSearxng", "RecordedRequest", "Reply"]

ENGINES: Mapping[str, tuple[str, ...]] = {
    "general": ("duckduckgo", "bing", "yacy"),
    "news": ("bing news", "yahoo news"),
    "images": ("bing images", "flickr"),
}
_TIME_RANGES = ("day", "week", "month", "year")
_NEWS_EPOCH = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
_FORBIDDEN_HTML = (
    b"<!DOCTYPE html><html><head><title>403 Forbidden</title></head>"
    b"<body><h1>Forbidden</h1><p>You don't have the permission to access the requested resource.</p></body></html>"
)


@dataclass
class RecordedRequest:
    """One request as the fake saw it: method, path, query parameters (last value wins) and lower-cased headers."""

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    status: int = 0


@dataclass
class Reply:
    """What the fake answers; the MockTransport and the real server both render it."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay: float = 0.0


def _json(status: int, obj: Any, delay: float = 0.0) -> Reply:
    return Reply(status, json.dumps(obj).encode(), [("Content-Type", "application/json")], delay)


def _html(status: int, body: bytes, delay: float = 0.0) -> Reply:
    return Reply(status, body, [("Content-Type", "text/html; charset=utf-8")], delay)


def _slug(query: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")[:40] or "q"


class FakeSearxng:
    """SearXNG's ``/search`` endpoint as pure logic: ``handle()`` turns a request into a ``Reply``."""

    def __init__(self, *, results_per_page: int = 10, pages: int = 3, auth: tuple[str, str] | None = None) -> None:
        self.results_per_page = results_per_page
        self.pages = pages  # pages that have results; later pages are empty (0 = nothing ever found)
        self.auth = auth  # (user, password) a proxy in front of the instance demands, or None
        self.json_enabled = True  # settings.yml search.formats includes json
        self.unresponsive: list[tuple[str, str]] = []  # engines reported as failed next to the results
        self.all_engines_fail = False  # every engine fails: 200, no results, all engines unresponsive
        self.delay_seconds = 0.0  # wait before answering (the real server waits on real time)
        self.legacy = False  # an older build: number_of_results sent, answers as plain strings
        self.answers: list[Any] = []
        self.infoboxes: list[dict[str, Any]] = []
        self.suggestions: list[str] = []
        self.corrections: list[str] = []
        self.extra_results: list[Any] = []  # put first on page 1, exactly as given
        self.requests: list[RecordedRequest] = []
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ controls

    def fail_next(self, status: int, times: int = 1) -> None:
        """Answer the next ``times`` searches with ``status`` (an HTML error page, as a proxy would send)."""
        with self._lock:
            self._failures.extend([status] * times)

    def search_requests(self) -> list[RecordedRequest]:
        """Recorded requests to ``/search`` only."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/search")]

    # ------------------------------------------------------------------ the API

    def handle(self, method: str, path: str, params: list[tuple[str, str]], headers: Mapping[str, str]) -> Reply:
        """Answer one request the way a SearXNG instance configured like this fake would."""
        record = RecordedRequest(method.upper(), path, dict(params), {k.lower(): v for k, v in headers.items()})
        with self._lock:
            self.requests.append(record)
            reply = self._dispatch(record)
        record.status = reply.status
        return reply

    def _dispatch(self, req: RecordedRequest) -> Reply:
        delay = self.delay_seconds
        if not req.path.endswith("/search"):
            return _html(404, b"<html><body><h1>Not Found</h1></body></html>", delay)
        if req.method != "GET":
            return _html(405, b"<html><body><h1>Method Not Allowed</h1></body></html>", delay)
        if self.auth is not None and req.headers.get("authorization") != self._basic(*self.auth):
            reply = _html(401, b"<html><body>Unauthorized</body></html>", delay)
            reply.headers.append(("WWW-Authenticate", 'Basic realm="searxng"'))
            return reply
        if self._failures:
            status = self._failures.popleft()
            return _html(status, f"<html><body><h1>Error {status}</h1></body></html>".encode(), delay)
        if req.params.get("format") != "json":
            return _html(200, b"<html><body>results page</body></html>", delay)
        if not self.json_enabled:
            return _html(403, _FORBIDDEN_HTML, delay)
        problem = self._invalid(req.params)
        if problem:
            return _json(400, {"error": problem}, delay)
        return _json(200, self._answer(req.params), delay)

    @staticmethod
    def _basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    @staticmethod
    def _invalid(params: Mapping[str, str]) -> str | None:
        if not params.get("q", "").strip():
            return "No query"
        safesearch = params.get("safesearch")
        if safesearch is not None and safesearch not in ("0", "1", "2"):
            return f"Invalid value {safesearch} for parameter safesearch"
        pageno = params.get("pageno")
        if pageno is not None and (not pageno.isdigit() or int(pageno) < 1):
            return f"Invalid value {pageno} for parameter pageno"
        time_range = params.get("time_range")
        if time_range and time_range not in _TIME_RANGES:
            return f"Invalid value {time_range} for parameter time_range"
        return None

    def _answer(self, params: Mapping[str, str]) -> dict[str, Any]:
        query = params["q"]
        asked = [c.strip() for c in params.get("categories", "general").split(",")]
        category = next((c for c in asked if c in ENGINES), "general")  # unknown names are ignored
        engines = ENGINES[category]
        page = int(params.get("pageno", "1"))
        unresponsive = [list(pair) for pair in self.unresponsive]
        if self.all_engines_fail:
            results: list[dict[str, Any]] = []
            unresponsive = [[engine, "timeout"] for engine in engines]
        else:
            per_page = self.results_per_page
            if params.get("time_range"):
                per_page = max(1, per_page // 2)  # engines without time-range support are skipped
            results = [] if page > self.pages else self._page(query, category, page, per_page)
            if page == 1:
                results = [*self.extra_results, *results]
        answers: list[Any] = [a if not self.legacy else a.get("answer", "") for a in self.answers]
        body: dict[str, Any] = {
            "query": query,
            "results": results,
            "answers": answers,
            "corrections": list(self.corrections),
            "infoboxes": list(self.infoboxes),
            "suggestions": list(self.suggestions),
            "unresponsive_engines": unresponsive,
        }
        if self.legacy:
            body["number_of_results"] = 0
        return body

    @staticmethod
    def _page(query: str, category: str, page: int, per_page: int) -> list[dict[str, Any]]:
        engines = ENGINES[category]
        slug = _slug(query)
        out: list[dict[str, Any]] = []
        for i in range(per_page):
            n = (page - 1) * per_page + i  # global index, so pages never repeat a URL
            found_by = [engines[n % len(engines)], *([engines[(n + 1) % len(engines)]] if n % 3 == 0 else [])]
            item: dict[str, Any] = {
                "url": f"https://site{n % 7}.example.org/{slug}/{n + 1}",
                "title": f"{query} – result {n + 1}",
                "content": f"About <b>{query}</b> &amp; more (result {n + 1}).",
                "engine": found_by[0],
                "engines": found_by,
                "positions": [i + 1] * len(found_by),
                "score": round(len(found_by) / (n + 1), 4),
                "category": category,
                "template": "default.html",
                "img_src": "",
                "thumbnail": "",
                "priority": "",
                "publishedDate": None,
            }
            if category == "news":
                item["url"] = f"https://news{n % 3}.example.com/{slug}/{n + 1}"
                item["publishedDate"] = (_NEWS_EPOCH - timedelta(hours=n)).isoformat()
            elif category == "images":
                item.update(
                    template="images.html",
                    img_src=f"https://img.example.net/{slug}/{n + 1}.jpg",
                    thumbnail_src=f"https://img.example.net/{slug}/{n + 1}.thumb.jpg",
                    resolution="800x600",
                    img_format="jpeg",
                )
            out.append(item)
        return out

    # ------------------------------------------------------------------ as an httpx2 transport

    def mock_transport(self) -> httpx2.MockTransport:
        """An httpx2 transport backed by this fake, for unit tests without sockets."""

        async def handler(request: httpx2.Request) -> httpx2.Response:
            reply = self.handle(
                request.method, request.url.path, list(request.url.params.multi_items()), dict(request.headers)
            )
            if reply.delay > 0:
                await anyio.sleep(reply.delay)
            return httpx2.Response(reply.status, headers=reply.headers, content=reply.body, request=request)

        return httpx2.MockTransport(handler)
