"""Pure ASGI guards for the HTTP transport: the checks the SDK's streamable HTTP app does not make itself.

Host/Origin (DNS rebinding) and the body cap are the SDK's own (``TransportSecuritySettings`` from ``sdk_security``
and ``max_request_body_size``); what stays here, each for a reason:

* bearer token: the SDK checks bearer tokens only as an OAuth resource server, whose 401 points clients at OAuth
  discovery; a shared static token (``BRAVE_SEARCH_HTTP_TOKEN``) is not something it offers;
* POST JSON only: even stateless, the SDK answers a GET with a server-to-client SSE stream it never writes to or
  ends (a client hung on it for 24 minutes), and a DELETE as the end of a session that does not exist;
* requests in flight: the SDK caps stateful sessions (``max_sessions``), never requests, and a stateless server
  has no sessions.

Each answers a refusal with a bare status code and an empty body. They know nothing of tools or MCP messages;
``http.build_http_app`` puts them in front of the SDK's app in a fixed order.
"""

from __future__ import annotations

import hmac
import ipaddress

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

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


class _Guard:
    """An ASGI layer that checks HTTP requests: lifespan events pass, any other scope (a websocket) is closed, so
    no guard can be skipped by speaking something other than HTTP."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route by scope type: HTTP to the check, lifespan through, anything else closed."""
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """This layer's check of one HTTP request (each guard writes its own)."""
        raise NotImplementedError


class BearerGuard(_Guard):
    """Requires ``Authorization: Bearer <token>``, compared in constant time; 401 with no detail otherwise."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        super().__init__(app)
        self._token = token.encode()

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let the request through only with the right token."""
        raw = next((value for key, value in scope["headers"] if key == b"authorization"), b"")
        scheme, _, presented = raw.strip().partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(presented.strip(), self._token):
            await _refuse(send, 401, {"www-authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


class PostJsonOnly(_Guard):
    """The stateless endpoint takes POSTed JSON only: any other method is 405 (``Allow: POST``), any other body 415.

    Without it a GET opens the SDK's server-to-client SSE stream, which a stateless server never writes to or ends
    (a client hung on it for 24 minutes), and a DELETE asks to end a session that does not exist. Other paths pass,
    so they keep their 404.
    """

    def __init__(self, app: ASGIApp, path: str) -> None:
        super().__init__(app)
        self.path = path

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a method other than POST, then a body not declared as JSON; hand on a lower-case media type."""
        if scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await _refuse(send, 405, {"allow": "POST"})
            return
        declared = Headers(scope=scope).get("content-type", "")
        media, _, parameters = declared.partition(";")
        if media.strip().lower() != "application/json":
            await _refuse(send, 415)
            return
        # Media types are case-insensitive; hand on the lower-case form so the SDK's exact-match check agrees.
        value = ("application/json;" + parameters if parameters.strip() else "application/json").encode("latin-1")
        headers = [(k, value if k == b"content-type" else v) for k, v in scope["headers"]]
        await self.app({**scope, "headers": headers}, receive, send)


class InFlightCap(_Guard):
    """At most ``limit`` requests are served at once; the next is told 503 with ``Retry-After`` rather than queued.

    uvicorn's own ``limit_concurrency`` counts idle keep-alive connections and health probes and sends no
    ``Retry-After``; this counts only requests that passed every check before it, until their answer is sent.
    One event loop runs every request, so a plain counter needs no lock.
    """

    def __init__(self, app: ASGIApp, limit: int, retry_after_seconds: int) -> None:
        super().__init__(app)
        self.limit = limit
        self.retry_after = str(retry_after_seconds)
        self.in_flight = 0

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request in a free slot, or refuse it at once when none is free."""
        if self.in_flight >= self.limit:
            await _refuse(send, 503, {"retry-after": self.retry_after})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def sdk_security(patterns: tuple[HostPattern, ...]) -> TransportSecuritySettings:
    """The allowlist in the SDK's pattern syntax, passed explicitly: the SDK turns its DNS-rebinding check on by itself
    only when bound to loopback, and this server may be bound to 0.0.0.0 or a LAN address."""
    hosts: list[str] = []
    for name, port in patterns:
        hosts.extend([name, f"{name}:*"] if port is None else [f"{name}:{port}"])
    origins = [f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)
