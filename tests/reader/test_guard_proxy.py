"""The rendering browser's proxy on its own, spoken to as Chromium speaks to it: plain http requests in absolute
form and CONNECT tunnels (https and WebSockets). An allowed target is reached at its checked address; a refused one
gets a 403 and the server there never sees a connection; answers are marked to close; bytes are capped."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from anyio.abc import SocketStream

from brave_search_mcp.reader.addresses import AddressPolicy, system_resolver
from brave_search_mcp.reader.guard_proxy import GuardProxy, guard_proxy
from testkit.sites import FakeSite

pytestmark = pytest.mark.anyio
LOOPBACK_ONLY = AddressPolicy.from_entries(["127.0.0.1"])


@pytest.fixture
def internal() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.2") as running:  # loopback that is NOT opted in
        running.page("/", "secret")
        yield running


async def exchange(proxy: GuardProxy, request: bytes) -> bytes:
    """Send ``request`` to the proxy and read until it closes the connection (bounded)."""
    stream: SocketStream = await anyio.connect_tcp("127.0.0.1", proxy.port)
    async with stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(10):
            try:
                while True:
                    answer += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return answer


async def test_a_plain_request_reaches_an_allowed_site_once_and_is_marked_to_close(site: FakeSite) -> None:
    site.page("/page", "hello")
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        target = site.url("/page").encode()
        answer = await exchange(
            proxy, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n"
        )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == b"hello"
    assert b"Connection: close" in head and b"keep-alive" not in head.lower()
    assert site.requests[0].headers.get("connection") == "close"
    assert "proxy-connection" not in site.requests[0].headers
    assert proxy.hops == {"127.0.0.1": ["127.0.0.1"]}


async def test_a_refused_address_gets_403_and_nothing_is_sent(internal: FakeSite) -> None:
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        port = internal.port
        plain = await exchange(proxy, f"GET http://127.0.0.2:{port}/ HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        tunnel = await exchange(
            proxy, f"CONNECT 127.0.0.2:{port} HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n".encode()
        )
        named = await exchange(proxy, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    assert (
        plain.startswith(b"HTTP/1.1 403") and tunnel.startswith(b"HTTP/1.1 403") and named.startswith(b"HTTP/1.1 403")
    )
    assert internal.requests == []
    assert proxy.refused == ["127.0.0.2", "127.0.0.2", "localhost"]


async def test_a_tunnel_to_an_allowed_site_carries_the_conversation(site: FakeSite) -> None:
    site.page("/ws", "through the tunnel")
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        request = (
            f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\n\r\nGET /ws HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        answer = await exchange(proxy, request.encode())
    assert answer.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200")
    assert answer.endswith(b"through the tunnel")


async def test_other_schemes_and_garbage_are_refused(site: FakeSite) -> None:
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        ftp = await exchange(proxy, f"GET ftp://127.0.0.1:{site.port}/ HTTP/1.1\r\n\r\n".encode())
        streamed = await exchange(
            proxy, f"POST {site.url('/')} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode()
        )
        nonsense = await exchange(proxy, b"CONNECT nowhere HTTP/1.1\r\n\r\n")
    assert ftp.startswith(b"HTTP/1.1 403") and streamed.startswith(b"HTTP/1.1 501") and nonsense == b""
    assert site.requests == []


async def test_a_render_past_its_bytes_is_cut_and_opens_nothing_more(site: FakeSite) -> None:
    site.page("/big", "x" * 200_000)
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=100_000, max_connections=50) as proxy:
        first = await exchange(proxy, f"GET {site.url('/big')} HTTP/1.1\r\n\r\n".encode())
        second = await exchange(proxy, f"GET {site.url('/big')} HTTP/1.1\r\n\r\n".encode())
    assert 0 < len(first) < 200_000 and proxy.over_budget
    assert second.startswith(b"HTTP/1.1 403")
    assert site.count("/big") == 1


async def test_a_tunnel_to_a_port_out_of_range_is_dropped_and_the_proxy_keeps_serving(site: FakeSite) -> None:
    site.page("/after", "still serving")
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        wild = await exchange(proxy, b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n")
        after = await exchange(proxy, f"GET {site.url('/after')} HTTP/1.1\r\n\r\n".encode())
    assert wild == b""
    assert after.startswith(b"HTTP/1.1 200") and after.endswith(b"still serving")


async def test_a_render_opens_at_most_its_connections(site: FakeSite) -> None:
    site.page("/one", "one")
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=3) as proxy:
        answers = [await exchange(proxy, f"GET {site.url('/one')} HTTP/1.1\r\n\r\n".encode()) for _ in range(3)]
        tunnel = await exchange(proxy, f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\n\r\n".encode())
    assert all(answer.endswith(b"one") for answer in answers)
    assert tunnel.startswith(b"HTTP/1.1 403")
    assert site.count("/one") == 3 and len(site.requests) == 3


async def test_the_host_sent_is_the_checked_targets_and_conflicting_lengths_are_dropped(site: FakeSite) -> None:
    site.page("/page", "hello")
    async with guard_proxy(LOOPBACK_ONLY, system_resolver, max_bytes=1_000_000, max_connections=50) as proxy:
        target = site.url("/page").encode()
        answer = await exchange(proxy, b"GET " + target + b" HTTP/1.1\r\nHost: internal.example\r\n\r\n")
        smuggled = b"POST " + target + b" HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n"
        dropped = await exchange(proxy, smuggled + b"GET http://127.0.0.2/ HTTP/1.1\r\n\r\n")
    assert answer.endswith(b"hello") and dropped == b""
    (seen,) = site.requests
    assert seen.headers.get("host") == f"127.0.0.1:{site.port}"
