"""The only way a rendering browser reaches the network: a loopback proxy that checks every connection it opens.

Chromium is told to send everything through this proxy, loopback included (``<-loopback>``): documents,
sub-resources, fetch/XHR, frames, beacons, redirects (each hop is a new request) and WebSockets (tunnelled with
``CONNECT``, as https is). For each one the target host is resolved and judged by the reader's own rules
(``addresses.resolve_checked``) and the connection goes to exactly the checked address, so a page cannot reach
the user's network by name, by address or by DNS rebinding; a refused target gets a 403 and nothing is sent.
Plain http is forwarded one request per connection (``Connection: close``), so a request never rides a
connection opened for another host; its ``Host`` is the checked target's, and disagreeing lengths are refused.
Bytes from the network are counted against the render's cap, and a render that passes it has its connections
cut; connections are capped too (a WebSocket is a connection no request count sees). One proxy serves one render
(its counts are that render's). WebRTC and QUIC, which would not come here, are kept off by ``browser``'s flags.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from brave_search_mcp.models import errors
from brave_search_mcp.reader.addresses import AddressPolicy, Resolver, resolve_checked

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 32 * 1024  # a request line and headers; more is not a browser's request
HEAD_SECONDS = 10.0  # a browser sends its request head at once; a silent connection is dropped
CONNECT_SECONDS = 10.0
_HOP_HEADERS = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"te"})
_PORTS = {"http": 80}


class _OverBudget(Exception):
    """The render has received its cap of bytes: every connection of this proxy is cut."""


@dataclass
class GuardProxy:
    """One render's proxy: the policy it enforces, its byte cap, and what it saw (for the cache and tests)."""

    policy: AddressPolicy
    resolver: Resolver
    max_bytes: int
    max_connections: int  # connections the render may open (WebSockets too, which no request count sees)
    port: int = 0
    opened: int = 0  # connections asked for, refused ones included
    received: int = 0  # bytes from the network, all connections together
    over_budget: bool = False
    hops: dict[str, list[str]] = field(default_factory=dict)  # host -> addresses connected to, in order
    refused: list[str] = field(default_factory=list)  # hosts refused (by policy or failed resolution)

    def _count(self, size: int) -> None:
        self.received += size
        if self.received > self.max_bytes:
            self.over_budget = True
            raise _OverBudget

    async def _open(self, host: str, port: int) -> SocketStream | None:
        """A connection to ``host:port`` at a checked address, or None when the policy refuses it (never sent)."""
        self.opened += 1
        if self.over_budget or self.opened > self.max_connections:
            return None
        try:
            addresses = await resolve_checked(host, port, self.policy, self.resolver)
        except (errors.FetchBlocked, errors.NetworkError):
            self.refused.append(host)
            return None
        for address in addresses:
            try:
                with anyio.fail_after(CONNECT_SECONDS):
                    stream = await anyio.connect_tcp(address, port)
            except (OSError, TimeoutError):
                continue
            seen = self.hops.setdefault(host.lower(), [])
            if address not in seen:
                seen.append(address)
            return stream
        return None

    async def handle(self, client: SocketStream) -> None:
        """Serve one browser connection: a CONNECT tunnel or one plain http request, checked before anything is sent."""
        async with client:
            try:
                head, rest = await _read_head(client)
                await self._serve(client, head, rest)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, _OverBudget):
                pass
            except (TimeoutError, ValueError, OSError) as exc:
                logger.debug("render proxy: dropped a connection (%s)", type(exc).__name__)
            except Exception:  # a surprise drops this connection (fail closed), never the render's other ones
                logger.warning("render proxy: dropped a connection on an unexpected error", exc_info=True)

    async def _serve(self, client: SocketStream, head: bytes, rest: bytes) -> None:
        lines = head.split(b"\r\n")
        method, target, version = lines[0].decode("latin-1").split(" ", 2)
        if method.upper() == "CONNECT":
            host, port = _host_port(target)
            upstream = await self._open(host, port)
            if upstream is None:
                await _refuse(client)
                return
            async with upstream:
                await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                if rest:
                    await upstream.send(rest)
                await self._tunnel(client, upstream)
            return
        url = urlsplit(target)
        if url.scheme.lower() not in _PORTS or not url.hostname:
            await _refuse(client)
            return
        dropped = _HOP_HEADERS | {b"host"}  # the Host sent is the checked target's (RFC 9112 3.2.2), never another
        headers = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in dropped]
        headers.insert(0, b"Host: " + url.netloc.rpartition("@")[2].encode("latin-1"))
        names = {line.split(b":", 1)[0].strip().lower() for line in headers}
        if b"transfer-encoding" in names:  # a streamed upload: not forwarded (it cannot be delimited here)
            await _refuse(client, b"501 Not Implemented")
            return
        length = _content_length(headers)
        upstream = await self._open(url.hostname, url.port or _PORTS[url.scheme.lower()])
        if upstream is None:
            await _refuse(client)
            return
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        request = f"{method} {path} {version}\r\n".encode("latin-1") + b"".join(h + b"\r\n" for h in headers)
        async with upstream:
            await upstream.send(request + b"Connection: close\r\n\r\n")
            body = rest[:length]
            if body:
                await upstream.send(body)
            while len(body) < length:  # the rest of the request's body, exactly: nothing after it is forwarded
                chunk = await client.receive(min(65536, length - len(body)))
                body += chunk
                await upstream.send(chunk)
            await self._answer(upstream, client)

    async def _answer(self, upstream: SocketStream, client: SocketStream) -> None:
        """The site's answer to a plain http request, marked ``Connection: close`` so the browser sends its next
        request on a new connection (checked afresh), never on this one to this host."""
        head, rest = await _read_head(upstream, counted=self._count)
        lines = [line for line in head.split(b"\r\n") if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
        await client.send(b"\r\n".join(lines) + b"\r\nConnection: close\r\nProxy-Connection: close\r\n\r\n" + rest)
        async with anyio.create_task_group() as group:  # until the site ends, or the browser hangs up first

            async def down() -> None:
                await self._pipe(upstream, client)
                group.cancel_scope.cancel()

            group.start_soon(down)
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await client.receive()  # anything more from the browser is not forwarded: the exchange is over
            group.cancel_scope.cancel()

    async def _pipe(self, source: SocketStream, sink: SocketStream, *, counted: bool = True) -> None:
        """Copy until ``source`` ends; bytes from the network count against the render's cap."""
        try:
            while True:
                data = await source.receive(65536)
                if counted:
                    self._count(len(data))
                await sink.send(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, _OverBudget):
            pass
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await sink.send_eof()

    async def _tunnel(self, client: SocketStream, upstream: SocketStream) -> None:
        """Both directions of a CONNECT tunnel, until either side ends (or the render's bytes run out)."""
        async with anyio.create_task_group() as group:

            async def down() -> None:
                await self._pipe(upstream, client)
                group.cancel_scope.cancel()

            group.start_soon(down)
            await self._pipe(client, upstream, counted=False)
            await anyio.sleep_forever()  # until the way down ends: half-closed tunnels are normal


async def _read_head(stream: SocketStream, counted: Callable[[int], None] | None = None) -> tuple[bytes, bytes]:
    """A request's or response's head (up to the blank line) and whatever of the body came with it. A browser
    sends its head at once (``HEAD_SECONDS``); a site may think for as long as the render's deadline allows."""
    buffer = b""
    with anyio.fail_after(HEAD_SECONDS if counted is None else None):
        while b"\r\n\r\n" not in buffer:
            if len(buffer) > MAX_HEAD_BYTES:
                raise ValueError("head too large")
            data = await stream.receive(65536)
            if counted is not None:
                counted(len(data))
            buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def _host_port(target: str) -> tuple[str, int]:
    """``host:port`` of a CONNECT (IPv6 in brackets)."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("CONNECT target without a valid port")
    return host.strip("[]"), int(port)


def _content_length(headers: list[bytes]) -> int:
    """The request body's length; lengths that disagree (a smuggling attempt) or a negative one are refused."""
    lengths = {
        int(value.strip())
        for name, _, value in (line.partition(b":") for line in headers)
        if name.strip().lower() == b"content-length"
    }
    if len(lengths) > 1 or any(length < 0 for length in lengths):
        raise ValueError("conflicting or negative Content-Length")
    return lengths.pop() if lengths else 0


async def _refuse(client: SocketStream, status: bytes = b"403 Forbidden") -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await client.send(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@contextlib.asynccontextmanager
async def guard_proxy(
    policy: AddressPolicy, resolver: Resolver, *, max_bytes: int, max_connections: int
) -> AsyncIterator[GuardProxy]:
    """A proxy on 127.0.0.1 (``.port``) for one render; leaving closes its listener and cuts every connection."""
    proxy = GuardProxy(policy, resolver, max_bytes, max_connections)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    proxy.port = listener.extra(SocketAttribute.local_port)
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_serve, listener, proxy, group)
        try:
            yield proxy
        except Exception as exc:  # the render's own error passes out as itself, not inside a group
            failure = exc
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _serve(listener: anyio.abc.Listener[SocketStream], proxy: GuardProxy, group: TaskGroup) -> None:
    async with listener:
        await listener.serve(proxy.handle, group)
