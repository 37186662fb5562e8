"""The kept-alive GET transport against a real loopback server: framing, reuse, failures, TLS, bounds."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx2
import pytest
import trustme

from brave_search_mcp.upstream.keepalive import KeepAliveTransport, uses_proxy
from testkit.clock import FakeClock

pytestmark = pytest.mark.anyio

CLOSE = b""  # a scripted reply that closes the connection without answering


class Closing(bytes):
    """A scripted reply after which the server closes the connection."""


class ThenUnasked(bytes):
    """A scripted reply after which the server sends ``extra`` unasked, once ``go`` is set."""

    go: asyncio.Event
    extra: bytes


Reply = bytes | Callable[[], Awaitable[bytes]]


def ok(body: bytes = b"hello", *extra: str) -> bytes:
    """A complete 200 answer with a Content-Length."""
    head = "".join(f"{line}\r\n" for line in extra)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


class RawSite:
    """A loopback HTTP server answering each request with the next scripted reply (the last one repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[bytes] = []
        self.connections = self.open = self.most_open = 0
        self.arrived = asyncio.Event()
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self.requests.append(head)
                self.arrived.set()
                reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
                data = reply if isinstance(reply, bytes) else await reply()
                if data == CLOSE:
                    return
                writer.write(data)
                await writer.drain()
                if isinstance(data, Closing):
                    return
                if isinstance(data, ThenUnasked):
                    await data.go.wait()
                    writer.write(data.extra)
                    await writer.drain()
        finally:
            self.open -= 1
            writer.close()

    @asynccontextmanager
    async def running(self, context: ssl.SSLContext | None = None) -> AsyncIterator[RawSite]:
        """Serve on 127.0.0.1 (with TLS when ``context`` is given) until the block ends."""
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=context)
        self.port = server.sockets[0].getsockname()[1]
        async with server:
            yield self

    def url(self, path: str = "/res/v1/web/search?q=a+b", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"


async def get(transport: KeepAliveTransport, url: str, **headers: str) -> tuple[int, bytes]:
    """One GET through the transport, its body read whole and its response closed."""
    response = await transport.handle_async_request(httpx2.Request("GET", url, headers=headers))
    try:
        return response.status_code, b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
    finally:
        await response.aclose()


async def test_a_kept_alive_connection_carries_the_next_get() -> None:
    async with RawSite(ok(b"one"), ok(b"two")).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url(), **{"X-Token": "k"}) == (200, b"one")
        assert await get(transport, site.url("/b")) == (200, b"two")
        await transport.aclose()
    assert site.connections == 1
    first = site.requests[0].decode()
    assert first.startswith("GET /res/v1/web/search?q=a+b HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{site.port}\r\n" in first and "X-Token: k\r\n" in first


async def test_headers_and_reason_reach_the_response() -> None:
    reply = b"HTTP/1.1 429 Too Many Requests\r\nX-RateLimit-Remaining: 0, 9\r\nContent-Length: 2\r\n\r\n{}"
    async with RawSite(reply).running() as site:
        transport = KeepAliveTransport()
        response = await transport.handle_async_request(httpx2.Request("GET", site.url()))
        await response.aread()
        await response.aclose()
        await transport.aclose()
    assert response.status_code == 429 and response.reason_phrase == "Too Many Requests"
    assert response.headers["x-ratelimit-remaining"] == "0, 9" and response.content == b"{}"


async def test_a_chunked_body_is_put_back_together() -> None:
    reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    async with RawSite(reply).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, b"hello world")
        assert await get(transport, site.url()) == (200, b"hello world")
        await transport.aclose()
    assert site.connections == 1


@pytest.mark.parametrize(
    ("reply", "body"),
    [
        (
            Closing(b"HTTP/1.1 200 OK\r\n\r\nall of it"),
            b"all of it",
        ),  # a body without a length ends with the connection
        (ok(b"x", "Connection: close"), b"x"),  # the peer says it closes
    ],
    ids=["until-close", "connection-close"],
)
async def test_a_connection_the_answer_ends_is_not_reused(reply: bytes, body: bytes) -> None:
    async with RawSite(reply).running() as site:
        transport = KeepAliveTransport()
        for _ in range(2):
            assert await get(transport, site.url()) == (200, body)
        await transport.aclose()
    assert site.connections == 2


async def test_a_kept_alive_connection_the_peer_closed_while_idle_is_not_reused() -> None:
    async with RawSite(Closing(ok(b"first")), ok(b"second")).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, b"first")
        assert await get(transport, site.url()) == (200, b"second")
        await transport.aclose()
    assert site.connections == 2 and len(site.requests) == 2


async def test_a_connection_the_peer_speaks_on_while_idle_is_dropped() -> None:
    """An unasked answer (a 408 before closing, say) makes the connection useless: the next GET opens another."""
    unasked = ok(b"first") + b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"
    async with RawSite(unasked, ok(b"second")).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, b"first")
        for _ in range(20):  # bounded: let the loop deliver the unasked bytes to the idle connection
            await asyncio.sleep(0)
        assert await get(transport, site.url()) == (200, b"second")
        await transport.aclose()
    assert site.connections == 2


async def test_an_idle_connection_the_peer_speaks_on_later_is_dropped() -> None:
    first = ThenUnasked(ok(b"first"))
    first.go, first.extra = asyncio.Event(), b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"
    async with RawSite(first, ok(b"second")).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, b"first")
        first.go.set()
        for _ in range(50):  # bounded: the server writes, the loop delivers the bytes to the idle connection
            await asyncio.sleep(0)
        assert await get(transport, site.url()) == (200, b"second")
        await transport.aclose()
    assert site.connections == 2


async def test_a_request_the_peer_drops_unanswered_is_never_resent_here() -> None:
    """Its retry is the caller's, through admission again: a resend here would be a request nobody counted."""
    async with RawSite(ok(b"first"), CLOSE, ok(b"third")).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, b"first")
        with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
            await get(transport, site.url())
        assert len(site.requests) == 2
        assert await get(transport, site.url()) == (200, b"third")
        await transport.aclose()
    assert site.connections == 2


async def test_a_new_connection_that_closes_without_answering_is_an_error_and_not_resent() -> None:
    async with RawSite(CLOSE).running() as site:
        transport = KeepAliveTransport()
        with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
            await get(transport, site.url())
        await transport.aclose()
    assert len(site.requests) == 1


async def test_a_body_cut_short_is_an_error() -> None:
    async with RawSite(Closing(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")).running() as site:
        transport = KeepAliveTransport()
        with pytest.raises(httpx2.RemoteProtocolError, match="complete message body"):
            await get(transport, site.url())
        await transport.aclose()
    assert site.connections == 1


async def test_a_malformed_answer_is_a_protocol_error() -> None:
    async with RawSite(b"HTTP/1.1 abc nonsense\r\n\r\n").running() as site:
        transport = KeepAliveTransport()
        with pytest.raises(httpx2.RemoteProtocolError, match="Malformed HTTP response"):
            await get(transport, site.url())
        await transport.aclose()


async def test_nothing_listening_is_a_connect_error() -> None:
    async with RawSite(ok()).running() as site:
        port = site.port
    transport = KeepAliveTransport()
    with pytest.raises(httpx2.ConnectError):
        await get(transport, f"http://127.0.0.1:{port}/")
    await transport.aclose()


async def test_a_header_with_a_line_break_is_refused_and_nothing_is_sent() -> None:
    async with RawSite(ok()).running() as site:
        transport = KeepAliveTransport()
        with pytest.raises(httpx2.LocalProtocolError, match="X-Evil"):
            await get(transport, site.url(), **{"X-Evil": "a\r\nX-Injected: 1"})
        await transport.aclose()
    assert site.requests == []


async def test_a_cancelled_exchange_drops_its_connection() -> None:
    never = asyncio.Event()

    async def stuck() -> bytes:
        await never.wait()
        return CLOSE

    async with RawSite(stuck, ok(b"later")).running() as site:
        transport = KeepAliveTransport()
        task = asyncio.ensure_future(get(transport, site.url()))
        await site.arrived.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await get(transport, site.url()) == (200, b"later")
        await transport.aclose()
        never.set()
    assert site.connections == 2


async def test_a_body_left_unread_drops_the_connection() -> None:
    big = b"z" * 2_000_000
    async with RawSite(ok(big), ok(b"small")).running() as site:
        transport = KeepAliveTransport()
        response = await transport.handle_async_request(httpx2.Request("GET", site.url()))
        await response.aclose()  # the body was never read
        assert await get(transport, site.url()) == (200, b"small")
        await transport.aclose()
    assert site.connections == 2


async def test_a_large_body_arrives_whole_through_the_read_pauses() -> None:
    big = bytes(range(256)) * 8192  # 2 MiB, past the high-water mark many times
    async with RawSite(ok(big)).running() as site:
        transport = KeepAliveTransport()
        assert await get(transport, site.url()) == (200, big)
        await transport.aclose()


async def test_idle_connections_expire_on_the_transport_clock() -> None:
    clock = FakeClock()
    async with RawSite(ok()).running() as site:
        transport = KeepAliveTransport(clock=clock, keepalive_seconds=5.0)
        await get(transport, site.url())
        await clock.sleep(4.0)
        await get(transport, site.url())
        await clock.sleep(5.5)
        await get(transport, site.url())
        await transport.aclose()
    assert site.connections == 2


async def test_no_more_than_max_connections_are_open_at_once() -> None:
    release = asyncio.Event()

    async def held() -> bytes:
        await release.wait()
        return ok(b"done")

    async with RawSite(held).running() as site:
        transport = KeepAliveTransport(max_connections=2)
        calls = [asyncio.ensure_future(get(transport, site.url(f"/{n}"))) for n in range(5)]
        for _ in range(100):  # bounded: let every call get as far as it can
            await asyncio.sleep(0)
        assert len(site.requests) == 2 and site.open == 2
        release.set()
        assert [await call for call in calls] == [(200, b"done")] * 5
        await transport.aclose()
    assert site.most_open == 2


async def test_anything_but_a_bodiless_get_goes_to_the_fallback() -> None:
    seen: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.method)
        return httpx2.Response(201, content=b"posted")

    transport = KeepAliveTransport(fallback=lambda: httpx2.MockTransport(handler))
    response = await transport.handle_async_request(httpx2.Request("POST", "http://127.0.0.1:9/x", json={"a": 1}))
    await response.aread()
    await transport.aclose()
    assert seen == ["POST"] and response.status_code == 201 and response.content == b"posted"


@pytest.fixture
def tls(ca: trustme.CA) -> ssl.SSLContext:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    return server


async def test_https_is_verified_with_the_given_context(ca: trustme.CA, tls: ssl.SSLContext) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with RawSite(ok(b"secret")).running(tls) as site:
        transport = KeepAliveTransport(ssl_context=lambda: trusting)
        assert await get(transport, site.url(scheme="https")) == (200, b"secret")
        assert await get(transport, site.url(scheme="https")) == (200, b"secret")
        await transport.aclose()
        stranger = KeepAliveTransport(ssl_context=ssl.create_default_context)
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await get(stranger, site.url(scheme="https"))
        await stranger.aclose()
    assert site.connections >= 1


async def test_a_closed_transport_sends_nothing() -> None:
    async with RawSite(ok()).running() as site:
        transport = KeepAliveTransport()
        await transport.aclose()
        with pytest.raises(httpx2.ConnectError, match="closed"):
            await get(transport, site.url())
    assert site.requests == []


@pytest.mark.usefixtures("network_env")
def test_a_named_proxy_keeps_the_exchange_on_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not uses_proxy()
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert uses_proxy()


def test_the_transport_works_under_uvloop_whose_transports_are_not_asyncio_subclasses() -> None:
    """An application may run the library on uvloop: its TCP transport is not an ``asyncio.Transport`` instance."""
    uvloop = pytest.importorskip("uvloop")

    async def two_gets() -> list[tuple[int, bytes]]:
        async with RawSite(ok(b"one"), ok(b"two")).running() as site:
            transport = KeepAliveTransport()
            try:
                return [await get(transport, site.url()), await get(transport, site.url())]
            finally:
                await transport.aclose()

    assert uvloop.run(two_gets()) == [(200, b"one"), (200, b"two")]
