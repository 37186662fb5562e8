"""A client's GETs built from what is fixed once per client: the request head in bytes for the kept-alive transport,
an ``httpx2.Request`` for any other (a test's, or httpx2's own behind a proxy), from the same merged headers.

Why: parsing the URL into ``httpx2.URL``, building the ``Request`` and then the ``Response`` and its ``Headers`` cost
about 0.1 ms a search, more than the kept-alive exchange itself. The head sent is byte for byte the one
``request_head`` writes for httpx2's request (tests/test_client.py), but for cookies, which this path never sends:
Brave's API sets none, and the client's jar could only have filled from the answers of its streamed POSTs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import httpx2

from brave_search_mcp.upstream.keepalive import DEFAULT_PORTS, KeepAliveTransport, Origin, Reply, request_head

MAX_URL_CHARS = 65_536  # httpx2 refuses a longer URL (``InvalidURL``)
# A path and query httpx2 sends as written (what ``urlencode`` makes): anything else goes through ``httpx2.URL``.
_AS_WRITTEN = re.compile(r"[A-Za-z0-9/_.~+=&?-]*(?:%[0-9A-Fa-f]{2}[A-Za-z0-9/_.~+=&?-]*)*")

Headers = tuple[tuple[str, str], ...]


class GetRequests:
    """Every GET of one client to its base URL; ``target`` before admission, ``send`` after it."""

    def __init__(
        self,
        http: httpx2.AsyncClient,
        base_url: str,
        fixed: Mapping[str, str],
        direct: httpx2.AsyncBaseTransport | None,
    ) -> None:
        self._http, self._direct = http, direct
        self._base = base_url.rstrip("/")
        self._headers = httpx2.Headers(http.headers)
        self._headers.update(fixed)
        self._extensions = {"timeout": http.timeout.as_dict()}
        self._kept_alive = direct if isinstance(direct, KeepAliveTransport) else None
        self._lines: bytes | None = None  # the header lines every GET sends (``_header_lines``)
        base = self._base_url = httpx2.URL(self._base + "/")
        self._origin: Origin = (base.scheme, base.host, base.port or DEFAULT_PORTS.get(base.scheme, 0))
        self._prefix = base.raw_path.rstrip(b"/")  # the base URL's own path, before every endpoint's

    def target(self, suffix: str, extra: Headers = ()) -> httpx2.URL | bytes:
        """The request target of ``base + suffix``: bytes for the kept-alive transport, else ``httpx2.URL``; raises
        what ``httpx2.URL`` raises for a URL it refuses (so a refusal happens before anything is admitted)."""
        if self._kept_alive is None or extra or not _AS_WRITTEN.fullmatch(suffix):
            return httpx2.URL(self._base + suffix)
        if len(self._base) + len(suffix) > MAX_URL_CHARS:
            raise httpx2.InvalidURL("URL too long")
        return self._prefix + suffix.encode("ascii")

    async def send(self, target: httpx2.URL | bytes, extra: Headers = ()) -> Reply | httpx2.Response:
        """Send the GET and wait for its answer's head; the body is read from what is returned."""
        if isinstance(target, bytes):
            assert self._kept_alive is not None
            head = b"GET " + target + b" HTTP/1.1\r\n" + self._header_lines()
            return await self._kept_alive.get(self._origin, head)
        headers = self._headers
        if extra:
            headers = headers.copy()
            headers.update(dict(extra))
        request = httpx2.Request(
            "GET", target, headers=headers, cookies=self._http.cookies, extensions=dict(self._extensions)
        )
        direct = self._direct
        return await (direct.handle_async_request(request) if direct else self._http.send(request, stream=True))

    def _header_lines(self) -> bytes:
        """The header lines (Host first, as httpx2 orders them) of the head ``request_head`` writes for the base URL,
        which refuses a header holding CR, LF or NUL: a key with one fails every GET, as through httpx2, unsent."""
        if self._lines is None:
            head = request_head(httpx2.Request("GET", self._base_url, headers=self._headers))
            self._lines = head[head.index(b"\r\n") + 2 :]
        return self._lines
