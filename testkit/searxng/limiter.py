"""SearXNG's bot limiter as an instance with ``server.limiter: true`` (or ``public_instance: true``) runs it.

Written from ``searx/limiter.py`` and ``searx/botdetection/`` (commit 9fea412) and measurements of a real
instance with a Valkey store (team notes, searxng-real.md §g). On ``/search`` it refuses with **429
``text/html`` "Too Many Requests", no Retry-After** a User-Agent of a known bot (curl, python-requests,
Python-urllib, empty …), an ``Accept`` that does not admit ``text/html``, an ``Accept-Encoding`` list
without ``gzip``/``deflate``, a missing ``Accept-Language``; more than 4 requests an hour with a
``format`` other than html **in the URL** (a POST form's ``format`` is not counted); more than 15 requests
in 20 s or 150 in 600 s. A public instance (link-token mode) treats API clients as suspicious: 2 requests
in 20 s, then 429, and from the 4th request on a 302 to ``/`` for good.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Mapping

__all__ = ["BotLimiter", "Refusal"]

# The start of searx/botdetection/http_user_agent.USER_AGENT (re.match: anchored at the start only).
_BOT_AGENT = re.compile(
    r"(unknown|[Cc][Uu][Rr][Ll]|[wW]get|Scrapy|python-requests|Go-http-client|Java|okhttp|HttpClient|Python"
    r"|libwww-perl|Ruby|Googlebot|bingbot|HeadlessChrome)"
)
API_WINDOW, API_MAX = 3600.0, 4
BURST_WINDOW, BURST_MAX, BURST_MAX_SUSPICIOUS = 20.0, 15, 2
LONG_WINDOW, LONG_MAX = 600.0, 150
SUSPICIOUS_MAX = 3

Refusal = tuple[int, str]  # (status, why): 429 with the HTML text, or 302 to "/"


class _Window:
    """A sliding window of request times, counted the way SearXNG's ``incr_sliding_window`` counts."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._times: deque[float] = deque()

    def count(self, now: float) -> int:
        """Add one request at ``now``; how many fall in the window (this one included)."""
        while self._times and self._times[0] <= now - self.seconds:
            self._times.popleft()
        self._times.append(now)
        return len(self._times)


def _admits_html(accept: str) -> bool:
    """Whether ``Accept`` lets ``text/html`` through (werkzeug's ``'text/html' in accept_mimetypes``)."""
    for part in accept.split(","):
        kind, _, params = part.strip().partition(";")
        if kind.strip() in ("text/html", "text/*", "*/*") and "q=0" not in params.replace(" ", "").split(";"):
            return True
    return False


class _Client:
    """The sliding windows of one client address (SearXNG keys them by the client's network, a /32 for IPv4)."""

    def __init__(self) -> None:
        self.api = _Window(API_WINDOW)
        self.burst = _Window(BURST_WINDOW)
        self.long = _Window(LONG_WINDOW)
        self.suspicious = _Window(30 * 24 * 3600.0)


class BotLimiter:
    """The checks, and the windows of each client address; ``clock`` is injectable."""

    def __init__(self, *, public_instance: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.public_instance = public_instance
        self.clock = clock
        self._clients: dict[str, _Client] = {}

    def check(
        self, headers: Mapping[str, str], url_params: Mapping[str, str], client: str = "127.0.0.1"
    ) -> Refusal | None:
        """None when ``client``'s request to ``/search`` may go on; else the refusal (``headers`` lower-cased).
        Every request counts in the windows, refused ones too, as SearXNG's ``incr_sliding_window`` counts."""
        why = self._headers(headers)
        if why is not None:
            return 429, why
        now = self.clock()
        windows = self._clients.setdefault(client, _Client())
        if url_params.get("format", "html") != "html" and windows.api.count(now) > API_MAX:
            return 429, "too many request in API_WINDOW"
        if self.public_instance:  # no link token: every API client is suspicious
            if windows.suspicious.count(now) > SUSPICIOUS_MAX:
                return 302, "too many request from a suspicious IP"
            if windows.burst.count(now) > BURST_MAX_SUSPICIOUS:
                return 429, "too many request in BURST_WINDOW (BURST_MAX_SUSPICIOUS)"
            return None
        if windows.burst.count(now) > BURST_MAX:
            return 429, "too many request in BURST_WINDOW (BURST_MAX)"
        if windows.long.count(now) > LONG_MAX:
            return 429, "too many request in LONG_WINDOW (LONG_MAX)"
        return None

    @staticmethod
    def _headers(headers: Mapping[str, str]) -> str | None:
        if _BOT_AGENT.match(headers.get("user-agent", "unknown")):
            return "bot detected, HTTP header User-Agent"
        if not _admits_html(headers.get("accept", "")):
            return "HTTP header Accept did not contain text/html"
        encodings = [part.strip() for part in headers.get("accept-encoding", "").split(",")]
        if "gzip" not in encodings and "deflate" not in encodings:
            return "HTTP header Accept-Encoding did not contain gzip nor deflate"
        if not headers.get("accept-language", "").strip():
            return "missing HTTP header Accept-Language"
        return None
