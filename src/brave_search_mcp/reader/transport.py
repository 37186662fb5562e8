"""The reader's HTTP transport: connects only to addresses ``addresses.py`` checked, so DNS cannot swap them.

httpx2's own transport resolves the host when it connects, which would let a name answer a public
address to our check and a private one to the connect (DNS rebinding). httpx2 does not expose
httpcore2's ``network_backend`` hook, so this transport is httpx2's own with its ``httpcore2`` pool rebuilt
on a ``PinnedBackend``: its ``connect_tcp(host, port)`` ignores DNS and connects to the
addresses pinned for exactly that host and port, and refuses a host nothing was pinned for. Everything
above the socket is unchanged: the URL keeps the host name, so the Host header, TLS SNI and certificate
verification are all for the name (``start_tls`` receives ``server_hostname`` from the URL's host).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable

import httpcore2
import httpx2


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


class PinnedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's own transport (its request and response conversion, its error mapping), whose connection pool's
    only way to the network is a ``PinnedBackend``: the URL, Host header and SNI keep the host name.

    httpx2 takes no network backend, so the pool it builds is replaced by one that has ours. ``_pool`` is the one
    private attribute relied on; the pinning and TLS tests (tests/reader/) fail at once if an upgrade moves it.
    """

    def __init__(self, backend: PinnedBackend, ssl_context: ssl.SSLContext) -> None:
        limits = httpx2.Limits(max_connections=4, max_keepalive_connections=2, keepalive_expiry=5.0)
        super().__init__(verify=ssl_context, trust_env=False, limits=limits)
        self.backend = backend
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=backend,
        )
