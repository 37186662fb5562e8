"""The streamable HTTP transport: the SDK's ``/mcp`` app (stateless, JSON responses) behind a bearer token, a
POST-JSON-only rule and a cap on requests in flight.

The SDK's app makes the Host/Origin (DNS-rebinding) check and caps the body itself; it is given the allowlist
explicitly (``sdk_security``), since on its own it checks only when bound to loopback. What it does not do lives in
``http_guards`` (each guard says why). The order: ``/healthz`` bypass, token, method and media type, requests in
flight, then the SDK: body cap, Host, Origin, MCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from brave_search_mcp._version import __version__
from brave_search_mcp.faces.http_guards import (
    BearerGuard,
    HostPattern,
    InFlightCap,
    PostJsonOnly,
    is_loopback,
    sdk_security,
    split_host,
)
from brave_search_mcp.faces.metrics import MetricsObserver, metrics_routes, traced

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
TOKEN_VARIABLE = "BRAVE_SEARCH_HTTP_TOKEN"
MIN_TOKEN_LENGTH = 16  # a short token on a network-facing port is guessable
LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
_GRACEFUL_SHUTDOWN_SECONDS = 10
MAX_IN_FLIGHT_LIMIT = 10_000
RETRY_AFTER_SECONDS = 1  # a refused request waits for one of the others, which take milliseconds to seconds


@dataclass(frozen=True)
class HttpOptions:
    """Where and how the HTTP transport listens; validated on construction so a bad setup fails at start."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = field(default=None, repr=False)  # never shown in reprs or logs
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 1_048_576
    max_in_flight: int = 100
    metrics_token: str | None = field(default=None, repr=False)  # /metrics' own token; None: the /mcp one

    def __post_init__(self) -> None:
        """Refuse configurations that would be unsafe or cannot work, naming the setting to change."""
        if not self.host.strip():
            raise ValueError("HTTP host must not be empty (BRAVE_SEARCH_HOST)")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"HTTP port must be 0-65535, got {self.port} (BRAVE_SEARCH_PORT)")
        if self.max_body_bytes < 1024:
            raise ValueError(f"HTTP max body bytes must be at least 1024, got {self.max_body_bytes}")
        if not 1 <= self.max_in_flight <= MAX_IN_FLIGHT_LIMIT:
            raise ValueError(
                f"HTTP requests in flight must be 1-{MAX_IN_FLIGHT_LIMIT}, got {self.max_in_flight} "
                "(BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT)"
            )
        if self.token is not None and (
            len(self.token) < MIN_TOKEN_LENGTH
            or not self.token.isascii()
            or not self.token.isprintable()
            or " " in self.token
        ):
            raise ValueError(
                f"{TOKEN_VARIABLE} must be at least {MIN_TOKEN_LENGTH} printable ASCII characters without spaces "
                "(e.g. the output of `openssl rand -hex 32`)"
            )
        if self.metrics_token is not None and len(self.metrics_token) < MIN_TOKEN_LENGTH:
            raise ValueError(f"BRAVE_SEARCH_METRICS_TOKEN must be at least {MIN_TOKEN_LENGTH} characters")
        if self.token is None and not is_loopback(self.host):
            raise ValueError(
                f"refusing to serve HTTP on non-loopback address {self.host!r} without a bearer token: "
                f"set {TOKEN_VARIABLE} (clients send 'Authorization: Bearer <token>'), or bind 127.0.0.1"
            )
        for entry in self.allowed_hosts:
            if split_host(entry) is None:
                raise ValueError(
                    f"BRAVE_SEARCH_ALLOWED_HOSTS entry {entry!r} is not a host name, host:port or [IPv6]:port"
                )

    def host_patterns(self) -> tuple[HostPattern, ...]:
        """Host names (with optional port) a request may address: loopback names, the bind address, the allowlist."""
        entries = [*LOOPBACK_NAMES, *self.allowed_hosts]
        bind = self.host.strip().strip("[]").lower()
        if bind not in _WILDCARD_BINDS:  # the operator's own address or name, not one an attacker controls
            entries.append(f"[{bind}]" if ":" in bind else bind)
        patterns = [split_host(entry) for entry in entries]
        return tuple(dict.fromkeys(p for p in patterns if p is not None))


async def _health(_: Request) -> Response:
    """Liveness for probes and Docker: no token, no detail beyond the version."""
    return JSONResponse({"status": "ok", "version": __version__})


def build_http_app(server: Server[Any], options: HttpOptions, metrics: MetricsObserver | None = None) -> Starlette:
    """The ASGI app: ``/healthz`` open, ``/mcp`` (stateless, JSON responses) behind the guards, in their order;
    with ``metrics``, ``/metrics`` behind its token and the same Host/Origin check (never counted in flight)."""
    security = sdk_security(options.host_patterns())
    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=options.max_body_bytes,
        transport_security=security,
        host=options.host,
    )
    manager = server.session_manager  # the one this app's lifespan must run, even if another app is built later
    in_flight = InFlightCap(mcp_app, options.max_in_flight, RETRY_AFTER_SECONDS)
    guarded: ASGIApp = traced(PostJsonOnly(in_flight, MCP_PATH), metrics)
    if options.token is not None:
        guarded = BearerGuard(guarded, options.token)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():  # also enters the server's own lifespan (the Brave client)
            yield

    return Starlette(
        routes=[
            Route(HEALTH_PATH, _health, methods=["GET", "HEAD"]),
            *metrics_routes(metrics, options.metrics_token or options.token, in_flight, security),
            Mount("/", app=guarded),
        ],
        lifespan=lifespan,
    )


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal capture (``serve_http`` owns signals) and without ``sys.exit`` on failed start."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Do nothing: uvicorn would re-raise the signal after shutdown and turn a clean stop into a kill."""
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start, then report readiness; a failed lifespan start becomes an exception, not an exit."""
        try:
            await super().startup(sockets)
        except SystemExit:
            raise RuntimeError("the HTTP server failed to start (see the log above)") from None
        self._on_started()


@contextlib.contextmanager
def _stop_on_signals(server: _Uvicorn) -> Iterator[None]:
    """SIGINT/SIGTERM start a graceful shutdown; a second SIGINT forces it. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        logger.info("HTTP server: %s received, shutting down", sig.name)
        if server.should_exit and sig == signal.SIGINT:
            server.force_exit = True
        server.should_exit = True

    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        yield
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def bind_socket(options: HttpOptions) -> socket.socket:
    """The listening socket, bound before start-up so a busy port is a plain ``OSError`` naming the address.

    It is created with ``IPPROTO_TCP`` explicitly: asyncio sets ``TCP_NODELAY`` only on connections accepted from
    such a socket, and without it every keep-alive response waits ~40 ms for a delayed ACK.
    """
    host = options.host.strip().strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and host == "::":
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # "::" also serves IPv4, as 0.0.0.0 would
        sock.bind((host, options.port))
        sock.listen(512)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {options.host}:{options.port}: {exc.strerror}") from exc
    return sock


async def serve_http(
    server: Server[Any],
    options: HttpOptions,
    *,
    ready: Callable[[int], None] | None = None,
    metrics: MetricsObserver | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (or cancellation), then shut down gracefully; ``ready`` gets the bound port;
    ``metrics``: the observer ``build_server`` was given, served on ``/metrics``.

    Runs on asyncio (uvicorn's loop); signals are handled only when called from the main thread.
    """
    app = build_http_app(server, options, metrics)
    config = uvicorn.Config(
        app,
        log_config=None,  # keep the process's logging (stderr); uvicorn's default sends access logs to stdout
        access_log=False,
        server_header=False,
        lifespan="on",
        ws="none",
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_SECONDS,
    )
    sock = bind_socket(options)
    port = int(sock.getsockname()[1])

    def on_started() -> None:
        if ready is not None:  # first, so a caller's own start line is the first thing said once listening
            ready(port)
        logger.info("HTTP server: serving MCP on http://%s:%d%s", options.host, port, MCP_PATH)

    uv = _Uvicorn(config, on_started)
    with sock, _stop_on_signals(uv):
        serving = asyncio.get_running_loop().create_task(uv.serve(sockets=[sock]))
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            uv.should_exit = True
            with anyio.CancelScope(shield=True):
                await serving
            raise
