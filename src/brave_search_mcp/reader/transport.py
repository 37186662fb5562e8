"""The reader's HTTP transport: connects only to addresses ``addresses.py`` checked, so DNS cannot swap them.

httpx2's own transport resolves the host when it connects, which would let a name answer a public
address to our check and a private one to the connect (DNS rebinding). httpx2 does not expose
httpcore2's ``network_backend`` hook, so this transport builds the ``httpcore2.AsyncConnectionPool``
itself with a ``PinnedBackend``: its ``connect_tcp(host, port)`` ignores DNS and connects to the
addresses pinned for exactly that host and port, and refuses a host nothing was pinned for. Everything
above the socket is unchanged: the URL keeps the host name, so the Host header, TLS SNI and certificate
verification are all for the name (``start_tls`` receives ``server_hostname`` from the URL's host).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import contextmanager

import httpcore2
import httpx2

# httpcore2's failures as the httpx2 ones every caller (and exchange.typed_transport_errors) understands;
# order matters: subclasses first.
_MAPPED: tuple[tuple[type[Exception], type[httpx2.TransportError]], ...] = (
    (httpcore2.ConnectTimeout, httpx2.ConnectTimeout),
    (httpcore2.ReadTimeout, httpx2.ReadTimeout),
    (httpcore2.WriteTimeout, httpx2.WriteTimeout),
    (httpcore2.PoolTimeout, httpx2.PoolTimeout),
    (httpcore2.TimeoutException, httpx2.TimeoutException),
    (httpcore2.ConnectError, httpx2.ConnectError),
    (httpcore2.ReadError, httpx2.ReadError),
    (httpcore2.WriteError, httpx2.WriteError),
    (httpcore2.NetworkError, httpx2.NetworkError),
    (httpcore2.RemoteProtocolError, httpx2.RemoteProtocolError),
    (httpcore2.LocalProtocolError, httpx2.LocalProtocolError),
    (httpcore2.ProtocolError, httpx2.ProtocolError),
    (httpcore2.UnsupportedProtocol, httpx2.UnsupportedProtocol),
)


@contextmanager
def _httpx_errors(request: httpx2.Request | None = None) -> Iterator[None]:
    """Re-raise httpcore2's exceptions as httpx2's (what the rest of the package catches)."""
    try:
        yield
    except Exception as exc:
        for source, target in _MAPPED:
            if isinstance(exc, source):
                raise target(str(exc) or type(exc).__name__, request=request) from exc
        raise


class PinnedBackend(httpcore2.AsyncNetworkBackend):
    """A network backend that never resolves names: it connects to the addresses pinned for a host and port."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner if inner is not None else httpcore2.AnyIOBackend()
        self._pins: dict[tuple[str, int], tuple[str, ...]] = {}
        self.connects: list[tuple[str, str, int]] = []  # (host asked for, address used, port): for tests and logs

    def pin(self, host: str, port: int, addresses: Iterable[str]) -> None:
        """Allow connections to ``host:port`` and send them to ``addresses`` (already checked), in order."""
        self._pins[(host.lower(), port)] = tuple(addresses)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """Connect to the first pinned address that answers; refuse a host nothing was pinned for."""
        addresses = self._pins.get((host.lower(), port))
        if not addresses:
            raise httpcore2.ConnectError(f"no checked address for {host}:{port}")
        failure: Exception | None = None
        for address in addresses:
            self.connects.append((host, address, port))
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """Never used: the reader only speaks TCP to checked addresses."""
        raise httpcore2.ConnectError("the reader does not connect to unix sockets")

    async def sleep(self, seconds: float) -> None:
        """Delegate (httpcore2 sleeps only between connect retries, which the reader does not configure)."""
        await self._inner.sleep(seconds)


class _Body(httpx2.AsyncByteStream):
    """The pool's response stream with httpcore2's failures mapped as they happen mid-body."""

    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport over an ``httpcore2`` pool whose only way to the network is a ``PinnedBackend``."""

    def __init__(self, backend: PinnedBackend, ssl_context: ssl.SSLContext) -> None:
        self.backend = backend
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=4,
            max_keepalive_connections=2,
            keepalive_expiry=5.0,
            http1=True,
            http2=False,
            network_backend=backend,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send one request through the pinned pool (the URL, Host header and SNI keep the host name)."""
        assert isinstance(request.stream, AsyncIterable)
        core = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors(request):
            response = await self._pool.handle_async_request(core)
        assert isinstance(response.stream, AsyncIterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        with _httpx_errors():
            await self._pool.aclose()
