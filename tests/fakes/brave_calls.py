"""How the fake-Brave tests reach the fake: directly (``handle``), through its MockTransport, or its real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2

from testkit.brave import VALID_KEY, WEB_PATH, FakeBrave, Reply
from testkit.brave.http_server import FakeBraveServer

BASE = "https://api.search.brave.com"
RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-policy", "x-ratelimit-remaining", "x-ratelimit-reset")
Params = list[tuple[str, str]]


def ask(
    fake: FakeBrave,
    path: str = WEB_PATH,
    params: Params | None = None,
    *,
    token: str | None = VALID_KEY,
    headers: dict[str, str] | None = None,
) -> Reply:
    """Call the fake directly, like a client that does not ask for gzip."""
    sent = dict(headers or {})
    if token is not None:
        sent["X-Subscription-Token"] = token
    return fake.handle("GET", path, params if params is not None else [("q", "python asyncio")], sent)


def body(reply: Reply) -> Any:
    """The decoded JSON of a direct ``handle`` answer."""
    return reply.json()


def error_of(reply: Reply) -> dict[str, Any]:
    """The ``error`` object of a Brave error envelope, after checking the envelope itself."""
    data = body(reply)
    assert data["type"] == "ErrorResponse"
    assert data["error"]["status"] == reply.status
    error: dict[str, Any] = data["error"]
    return error


def mock_client(fake: FakeBrave, token: str | None = VALID_KEY) -> httpx2.Client:
    """A sync httpx2 client wired to ``fake`` through its MockTransport."""
    headers = {"X-Subscription-Token": token} if token is not None else {}
    return httpx2.Client(transport=fake.mock_transport(), base_url=BASE, headers=headers)


def with_client(face: str, fake: FakeBrave, run: Callable[[httpx2.Client], None]) -> None:
    """Run ``run`` with a client speaking to ``fake`` through the mock transport or the real server."""
    headers = {"X-Subscription-Token": VALID_KEY}
    if face == "mock":
        with mock_client(fake) as client:
            run(client)
        return
    with (
        FakeBraveServer(fake) as srv,
        httpx2.Client(base_url=srv.base_url, headers=headers, timeout=5.0) as client,
    ):
        run(client)
