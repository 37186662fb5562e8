"""The HTTP/1.1 transport under every Brave GET: httpx2's interface, llhttp's parser (httptools), asyncio's sockets.

Why: httpx2's own transport (httpcore2's pool and h11, pure Python) spends about 0.9 ms of CPU on each request, the
largest single part of a search's cost (``bench/overhead.py``); this one spends about two fifths of that through
``AsyncClient.send``, a fifth as the client sends (``get_requests``; ``python -m bench.upstream_http``), with the
parser Node's HTTP client uses. It does only what a Brave GET needs: a GET without a
body over HTTP/1.1, connections kept alive and reused, TLS verified with the context httpx2 builds
(``SSL_CERT_FILE``/``SSL_CERT_DIR`` included). Any other request goes to httpx2's own transport, and a client whose
environment names a proxy does not use this one at all (``uses_proxy``). It keeps no read timeout of its own: its
caller bounds each exchange (the client's ``anyio.fail_after``), and an exchange cut short closes its connection.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from functools import cached_property
from typing import cast
from urllib.request import getproxies

import httptools
import httpx2

from brave_search_mcp.clock import Clock

MAX_CONNECTIONS = 100  # open at once, as httpx2's default pool
MAX_IDLE_PER_ORIGIN = 20  # kept for reuse, as httpx2's default
KEEPALIVE_SECONDS = 5.0  # an idle connection older than this is closed instead of reused (httpx2's default)
HIGH_WATER = 256 * 1024  # bytes received and not yet read before the socket stops reading
DEFAULT_PORTS = {"http": 80, "https": 443}
_FORBIDDEN = (b"\r", b"\n", b"\0")

Origin = tuple[str, str, int]


def uses_proxy() -> bool:
    """Whether the environment names a proxy httpx2 would use (then httpx2 keeps the whole exchange)."""
    found = getproxies()
    return any(found.get(scheme) for scheme in ("http", "https", "all"))


def request_head(request: httpx2.Request) -> bytes:
    """The request line and headers of a bodiless GET; a CR, LF or NUL in a header is refused, never sent."""
    parts = [b"GET ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        if any(bad in name or bad in value for bad in _FORBIDDEN):
            raise httpx2.LocalProtocolError(f"Illegal character in the {name.decode('latin-1')!r} header.")
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One socket and the response being read on it (httptools calls the ``on_*`` methods)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.lost = False  # the peer closed it or it broke: never reused
        self.idle = False  # in the pool: anything the peer sends now (a 408, garbage) ends the connection
        self.idle_since = 0.0
        self._paused = False
        self._begin()

    def _begin(self) -> None:
        self.status, self.reason = 0, b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = self.complete = self.got_bytes = self._until_close = self._keep_alive = False
        self._surplus = False  # the peer sent a response after ours
        self.error: Exception | None = None
        self.chunks: deque[bytes] = deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None

    # -- one exchange -----------------------------------------------------------------------------

    def send(self, head: bytes) -> None:
        """Start an exchange: forget the last response, write the request."""
        self._begin()
        assert self._transport is not None
        self._transport.write(head)

    async def wait(self) -> None:
        """Until the response moves on (head, body, end) or the connection breaks."""
        if self.error is not None:
            raise self.error
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.error is not None:
            raise self.error

    def take(self) -> bytes:
        """The next body bytes received (the caller checked there are some); reading resumes below the mark."""
        chunk = self.chunks.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered < HIGH_WATER // 4 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return chunk

    def reusable(self) -> bool:
        """Whether the exchange ended cleanly and the peer keeps the connection open."""
        return self.complete and self._keep_alive and not self.lost and self.error is None

    def readable(self) -> bool:
        """Whether the socket has bytes (or its close) waiting that the event loop has not delivered yet."""
        sock = self._transport.get_extra_info("socket") if self._transport is not None else None
        if sock is None:
            return True
        try:
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        """Drop the socket (idempotent)."""
        self.lost = True
        if self._transport is not None:
            self._transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _closed_body_end(self) -> None:
        """A body without a length ends with the connection (which is then never reused)."""
        self.complete = True
        self._wake()

    def _fail(self, error: Exception) -> None:
        if self.error is None and not self.complete:
            self.error = error
        self._wake()

    # -- asyncio.Protocol -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: the socket is open (uvloop's transports are not ``asyncio.Transport`` subclasses, but are ones)."""
        self._transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        """asyncio: bytes arrived; the parser turns them into the ``on_*`` calls."""
        if self.idle:
            self.close()
            return
        self.got_bytes = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx2.RemoteProtocolError(f"Malformed HTTP response ({exc})."))
            self.close()

    def eof_received(self) -> bool:
        """asyncio: the peer will send nothing more; a body that runs until the close ends here."""
        self.lost = True
        if self.head_done and self._until_close and not self.complete:
            self._closed_body_end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the socket is gone; an exchange still running fails."""
        self.lost = True
        if self.head_done and self._until_close and not self.complete and exc is None:
            self._closed_body_end()
        elif exc is not None:
            self._fail(httpx2.ReadError(str(exc) or type(exc).__name__))
        elif not self.head_done:
            self._fail(httpx2.RemoteProtocolError("Server disconnected without sending a response."))
        else:
            self._fail(httpx2.RemoteProtocolError("Peer closed connection without sending complete message body."))

    # -- httptools callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        """httptools: a response starts; a second one after ours (nothing asked for it) ends the connection."""
        if self.complete:
            self._surplus = True
            self.lost = True

    def on_status(self, status: bytes) -> None:
        """httptools: (part of) the reason phrase."""
        if not self._surplus:
            self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        """httptools: one whole header."""
        if not self._surplus:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        """httptools: the head is in."""
        if self._surplus:
            return
        self.status = self._parser.get_status_code()
        names = {name.lower() for name, _ in self.headers}
        framed = b"content-length" in names or b"transfer-encoding" in names
        self._until_close = not framed and self.status >= 200 and self.status not in (204, 304)
        self.head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        """httptools: body bytes (already de-chunked)."""
        if self._surplus:
            return
        self.chunks.append(body)
        self._buffered += len(body)
        if not self._paused and self._buffered > HIGH_WATER and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        """httptools: the response is whole (the parser says here whether the peer keeps the connection)."""
        if self._surplus:
            return
        self._keep_alive = self._parser.should_keep_alive()
        self.complete = True
        self._wake()


class _Body(httpx2.AsyncByteStream):
    """A response's body as it arrives; closing it hands the connection back (or drops it, mid-body)."""

    def __init__(self, pool: KeepAliveTransport, origin: Origin, conn: _Connection) -> None:
        self._pool, self._origin, self._conn = pool, origin, conn
        self._done = False

    async def __aiter__(self) -> AsyncGenerator[bytes, None]:
        conn = self._conn
        while True:
            if conn.chunks:
                yield conn.take()
            elif conn.complete:
                return
            else:
                await conn.wait()

    async def aclose(self) -> None:
        """Return the connection to the pool when its exchange ended cleanly, else close it."""
        if not self._done:
            self._done = True
            self._pool.release(self._origin, self._conn)


class Reply:
    """A GET's answer read without an ``httpx2.Response`` (building one and reading its headers cost as much as the
    exchange): the status, the headers by lower-case name (repeats joined by ", ", as httpx2's ``get``), the body's
    bytes as received. ``to_httpx`` gives the full response over the same body, for an error or an unusual encoding."""

    is_stream_consumed = False

    def __init__(self, pool: KeepAliveTransport, origin: Origin, conn: _Connection) -> None:
        self.status_code = conn.status
        self.reason_phrase = conn.reason.decode("ascii", errors="ignore")
        self._raw, self._reason = conn.headers, conn.reason
        self._body = _Body(pool, origin, conn)
        self._full: httpx2.Response | None = None

    @cached_property
    def headers(self) -> dict[str, str]:
        """By lower-case name; read when first asked (an answer handed on as httpx2's never decodes them here)."""
        found: dict[str, str] = {}
        for raw_name, raw_value in self._raw:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            found[name] = f"{found[name]}, {value}" if name in found else value
        return found

    def aiter_raw(self) -> AsyncGenerator[bytes, None]:
        """The body as received."""
        return self._body.__aiter__()

    def aiter_bytes(self) -> AsyncGenerator[bytes, None]:
        """The body decoded: as received without a content encoding, else by httpx2's decoders."""
        if self.headers.get("content-encoding", "identity").strip().lower() in ("identity", ""):
            return self.aiter_raw()
        return self.to_httpx().aiter_bytes()

    def to_httpx(self) -> httpx2.Response:
        """The same answer as httpx2's response (one, however often asked), over the same body."""
        if self._full is None:
            extensions = {"http_version": b"HTTP/1.1", "reason_phrase": self._reason}
            self._full = httpx2.Response(self.status_code, headers=self._raw, stream=self._body, extensions=extensions)
        return self._full

    async def aclose(self) -> None:
        """Hand the connection back (see ``_Body.aclose``)."""
        await self._body.aclose()


class KeepAliveTransport(httpx2.AsyncBaseTransport):
    """A pool of kept-alive HTTP/1.1 connections per origin for bodiless GETs; anything else goes to ``fallback``."""

    def __init__(
        self,
        *,
        fallback: Callable[[], httpx2.AsyncBaseTransport] | None = None,
        ssl_context: Callable[[], ssl.SSLContext] | None = None,
        clock: Clock = time.monotonic,
        max_connections: int = MAX_CONNECTIONS,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
    ) -> None:
        self._make_fallback = fallback or (lambda: httpx2.AsyncHTTPTransport(trust_env=True))
        self._make_ssl = ssl_context or (lambda: httpx2.create_ssl_context(trust_env=True))
        self._fallback: httpx2.AsyncBaseTransport | None = None
        self._ssl: ssl.SSLContext | None = None  # built on the first HTTPS connection (it reads the CA bundle)
        self._clock = clock
        self._keepalive = keepalive_seconds
        self._idle: dict[Origin, list[_Connection]] = {}
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """httpx2: one exchange; a GET without a body here, anything else on httpx2's transport."""
        url = request.url
        headers = request.headers
        bodiless = "content-length" not in headers and "transfer-encoding" not in headers
        if request.method != "GET" or url.scheme not in DEFAULT_PORTS or not bodiless:
            return await self._other().handle_async_request(request)
        origin = (url.scheme, url.host, url.port or DEFAULT_PORTS[url.scheme])
        return (await self.get(origin, request_head(request))).to_httpx()

    async def get(self, origin: Origin, head: bytes) -> Reply:
        """One bodiless GET whose request line and headers are ``head`` (checked by its builder: ``request_head``, or
        ``GetRequests`` from bytes it checked once), answered as a ``Reply``."""
        if self._closed:
            raise httpx2.ConnectError("The transport is closed.")
        await self._slots.acquire()
        try:
            conn = await self._exchange(origin, head)
        except BaseException:
            self._slots.release()
            raise
        return Reply(self, origin, conn)

    async def _exchange(self, origin: Origin, head: bytes) -> _Connection:
        """Send ``head`` and wait for the response's head. Nothing is ever re-sent here: a request that fails goes
        back to the caller, whose retry passes admission again (every request sent is one the limits counted)."""
        conn = self._reuse(origin) or await self._connect(origin)
        try:
            conn.send(head)
            while not conn.head_done:
                await conn.wait()
        except BaseException:
            conn.close()
            raise
        return conn

    def _reuse(self, origin: Origin) -> _Connection | None:
        """The most recent idle connection that is still good: not closed by the peer, not past its keep-alive, and
        with nothing to read (an idle HTTP connection has nothing to say but its close, which may not have been
        seen yet)."""
        idle = self._idle.get(origin)
        now = self._clock()
        while idle:
            conn = idle.pop()
            if not conn.lost and now - conn.idle_since <= self._keepalive and not conn.readable():
                conn.idle = False
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context: ssl.SSLContext | None = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = self._make_ssl()
            context = self._ssl
        try:
            _, conn = await loop.create_connection(
                lambda: _Connection(loop), host, port, ssl=context, server_hostname=host if context else None
            )
        except (OSError, ssl.SSLError) as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return conn

    def release(self, origin: Origin, conn: _Connection) -> None:
        """A response is closed: keep its connection for the next GET to ``origin`` when it can carry one."""
        self._slots.release()
        idle = self._idle.setdefault(origin, [])
        if self._closed or not conn.reusable() or len(idle) >= MAX_IDLE_PER_ORIGIN:
            conn.close()
            return
        conn.idle, conn.idle_since = True, self._clock()
        idle.append(conn)

    def _other(self) -> httpx2.AsyncBaseTransport:
        if self._fallback is None:
            self._fallback = self._make_fallback()
        return self._fallback

    async def aclose(self) -> None:
        """Close every idle connection (and httpx2's transport); connections in use close when released."""
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.aclose()


def open_http(
    base_url: str, transport: httpx2.AsyncBaseTransport | None, timeout: float, clock: Clock
) -> tuple[httpx2.AsyncClient, httpx2.AsyncBaseTransport | None]:
    """A client's httpx2 client, and the transport its GETs may go to directly (None: through the client).

    trust_env: httpx2 reads HTTP(S)_PROXY, ALL_PROXY, NO_PROXY and SSL_CERT_FILE / SSL_CERT_DIR, the corporate-network
    conventions (tests/test_proxies.py, README). With no proxy named there is no transport to choose, so GETs skip
    the client's cookie, auth and redirect layers and go to ``transport`` (a test's) or a ``KeepAliveTransport``.
    """
    direct = None
    if not uses_proxy():
        direct = transport = transport or KeepAliveTransport(clock=clock)
    client = httpx2.AsyncClient(
        base_url=base_url, transport=transport, trust_env=True, timeout=timeout, follow_redirects=False
    )
    return client, direct
