"""The streamable HTTP transport: the SDK's ``/mcp`` app behind a body cap, a Host/Origin allowlist and a bearer token.

Why our own guards rather than the SDK's alone: the SDK switches its DNS-rebinding check off whenever the bind
address is not loopback, has no bearer-token check of its own short of full OAuth, and its host patterns reject a
bare ``Host: localhost``. The guards below run in a fixed order — ``/healthz`` bypass, body cap, Host/Origin,
token — and answer with a bare status code, so a caller learns nothing about why it was refused. The SDK's own
protection is configured with the same allowlist as a second, fail-closed line behind ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._version import __version__

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
TOKEN_VARIABLE = "BRAVE_SEARCH_HTTP_TOKEN"
LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
_GRACEFUL_SHUTDOWN_SECONDS = 10

HostPattern = tuple[str, int | None]  # (lower-case name, port or None for any port)


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine (so a token is optional)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> HostPattern | None:
    """``name[:port]`` or ``[v6][:port]`` → (lower-case name, port); None when it is not a plain host."""
    value = value.strip().lower()
    if not value or any(ch in value for ch in "/@?#\\ \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_raw = value.rpartition(":")
        if not sep:
            name, port_text = value, None
        elif ":" in name:  # an unbracketed IPv6 address is not a valid Host header
            return None
        else:
            port_text = port_text_raw
    if port_text is None or port_text == "*":
        return (name, None) if name else None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return (name, int(port_text)) if name else None


@dataclass(frozen=True)
class HttpOptions:
    """Where and how the HTTP transport listens; validated on construction so a bad setup fails at start."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = field(default=None, repr=False)  # never shown in reprs or logs
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        """Refuse configurations that would be unsafe or cannot work, naming the setting to change."""
        if not self.host.strip():
            raise ValueError("HTTP host must not be empty (BRAVE_SEARCH_HOST)")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"HTTP port must be 0-65535, got {self.port} (BRAVE_SEARCH_PORT)")
        if self.max_body_bytes < 1024:
            raise ValueError(f"HTTP max body bytes must be at least 1024, got {self.max_body_bytes}")
        if self.token is not None and (not self.token or not self.token.isprintable() or " " in self.token):
            raise ValueError(f"{TOKEN_VARIABLE} must be a non-empty token without spaces or control characters")
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
        bind = self.host.strip().lower()
        if bind not in _WILDCARD_BINDS:  # an explicit IP or name we bound to cannot be a rebinding target
            entries.append(f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind)
        patterns = [split_host(entry) for entry in entries]
        return tuple(dict.fromkeys(p for p in patterns if p is not None))


def _host_allowed(value: str | None, patterns: tuple[HostPattern, ...]) -> bool:
    parsed = split_host(value) if value else None
    if parsed is None:
        return False
    name, port = parsed
    return any(name == allowed and (allowed_port is None or allowed_port == port) for allowed, allowed_port in patterns)


def _origin_allowed(value: str | None, patterns: tuple[HostPattern, ...]) -> bool:
    if value is None:  # non-browser clients send no Origin; a browser always does on a cross-site POST
        return True
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query or parts.fragment:
        return False
    return _host_allowed(parts.netloc, patterns)


async def _refuse(send: Send, status: int, headers: dict[str, str] | None = None) -> None:
    """Answer with a bare status: no body, so a refused caller learns nothing it could use."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", b"0"), *((k.encode(), v.encode()) for k, v in (headers or {}).items())],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _not_http(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Lifespan events pass; any other non-HTTP scope (a websocket) is closed, so no guard can be skipped."""
    if scope["type"] == "lifespan":
        await app(scope, receive, send)
    elif scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})


class BodyCap:
    """Refuses request bodies over the cap: at once from Content-Length, or while counting a chunked stream."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then count what is actually received."""
        if scope["type"] != "http":
            await _not_http(self.app, scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await _refuse(send, 400)
                return
            if int(declared) > self.max_bytes:
                await _refuse(send, 413)
                return
        received = 0
        refused = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if not started:
                        await _refuse(send, 413)
                    return {"type": "http.disconnect"}  # the app sees a client that went away
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 already went out; drop whatever the app says afterwards
            started = True
            await send(message)

        await self.app(scope, counting_receive, guarded_send)


class ReadWholeBody:
    """Reads the (already capped) body before the SDK runs, so a refused or abandoned upload never reaches it.

    It sits innermost, after the token check, so an unauthenticated body is never read at all. When the cap
    trips mid-stream, ``BodyCap`` has already answered 413 and this layer simply returns.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Drain the body, then replay it to the app as one message."""
        if scope["type"] != "http":
            await _not_http(self.app, scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # disconnected, or refused by BodyCap
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class HostOriginGuard:
    """Stops DNS rebinding: the Host (and Origin, when sent) must name an allowed host, else 421 / 403."""

    def __init__(self, app: ASGIApp, patterns: tuple[HostPattern, ...]) -> None:
        self.app = app
        self.patterns = patterns

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Host, then Origin, before anything else sees the request."""
        if scope["type"] != "http":
            await _not_http(self.app, scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not _host_allowed(headers.get("host"), self.patterns):
            await _refuse(send, 421)
            return
        if not _origin_allowed(headers.get("origin"), self.patterns):
            await _refuse(send, 403)
            return
        # Host names are case-insensitive; hand on lower-case ones so the SDK's exact-match check agrees with ours.
        lowered = [(k, v.lower() if k in (b"host", b"origin") else v) for k, v in scope["headers"]]
        await self.app({**scope, "headers": lowered}, receive, send)


class BearerGuard:
    """Requires ``Authorization: Bearer <token>``, compared in constant time; 401 with no detail otherwise."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let the request through only with the right token."""
        if scope["type"] != "http":
            await _not_http(self.app, scope, receive, send)
            return
        raw = next((value for key, value in scope["headers"] if key == b"authorization"), b"")
        scheme, _, presented = raw.strip().partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(presented.strip(), self._token):
            await _refuse(send, 401, {"www-authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


def sdk_security(patterns: tuple[HostPattern, ...]) -> TransportSecuritySettings:
    """The same allowlist in the SDK's pattern syntax, so its own check (on even for 0.0.0.0) agrees with ours."""
    hosts: list[str] = []
    for name, port in patterns:
        hosts.extend([name, f"{name}:*"] if port is None else [f"{name}:{port}"])
    origins = [f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


async def _health(_: Request) -> Response:
    """Liveness for probes and Docker: no token, no detail beyond the version."""
    return JSONResponse({"status": "ok", "version": __version__})


def build_http_app(server: MCPServer[Any], options: HttpOptions) -> Starlette:
    """The ASGI app: ``/healthz`` open, ``/mcp`` (stateless, JSON responses) behind body cap, allowlist and token."""
    patterns = options.host_patterns()
    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=options.max_body_bytes,
        transport_security=sdk_security(patterns),
        host=options.host,
    )
    manager = server.session_manager  # the one this app's lifespan must run, even if another app is built later
    guarded: ASGIApp = ReadWholeBody(mcp_app)
    if options.token is not None:
        guarded = BearerGuard(guarded, options.token)
    guarded = BodyCap(HostOriginGuard(guarded, patterns), options.max_body_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():  # also enters the server's own lifespan (the Brave client)
            yield

    return Starlette(
        routes=[Route(HEALTH_PATH, _health, methods=["GET", "HEAD"]), Mount("/", app=guarded)],
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
    server: MCPServer[Any], options: HttpOptions, *, ready: Callable[[int], None] | None = None
) -> None:
    """Serve until SIGINT/SIGTERM (or cancellation), then shut down gracefully; ``ready`` gets the bound port.

    Runs on asyncio (uvicorn's loop); signals are handled only when called from the main thread.
    """
    app = build_http_app(server, options)
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
        logger.info("HTTP server: serving MCP on http://%s:%d%s", options.host, port, MCP_PATH)
        if ready is not None:
            ready(port)

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
