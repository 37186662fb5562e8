"""The streamable HTTP transport, served by a real uvicorn on 127.0.0.1 and driven by the SDK's HTTP client."""

from __future__ import annotations

import json
import queue
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server

from brave_search_mcp._version import __version__
from brave_search_mcp.faces.http import HttpOptions, build_http_app, serve_http
from brave_search_mcp.faces.mcp_server import build_server
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio

TOKEN = "test-token-not-a-secret-0123456789"
CAP = 4096
STARTUP_SECONDS = 10.0
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@dataclass
class Running:
    """A server serving in a background thread: where it listens and the fake behind it."""

    port: int
    fake: FakeBrave

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@contextmanager
def serving(fake: FakeBrave, **options: Any) -> Iterator[Running]:
    """Serve a server built on ``fake`` with these ``HttpOptions``."""
    with serving_server(build_server(make_settings(), transport=fake.mock_transport()), fake, **options) as running:
        yield running


@contextmanager
def serving_server(server: Server[Any], fake: FakeBrave | None = None, **options: Any) -> Iterator[Running]:
    """Run ``serve_http`` on a free port in its own event loop thread; cancel it (gracefully) on exit."""
    http_options = HttpOptions(port=0, **options)
    ports: queue.Queue[int] = queue.Queue()
    with start_blocking_portal() as portal:
        future = portal.start_task_soon(partial(serve_http, server, http_options, ready=ports.put))
        try:
            port = ports.get(timeout=STARTUP_SECONDS)
        except queue.Empty:
            future.cancel()
            raise AssertionError("HTTP server did not start in time") from None
        try:
            yield Running(port, fake or FakeBrave())
        finally:
            future.cancel()


@pytest.fixture
def open_server(fake: FakeBrave) -> Iterator[Running]:
    """No token (loopback), small body cap."""
    with serving(fake, max_body_bytes=CAP) as running:
        yield running


@pytest.fixture
def token_server(fake: FakeBrave) -> Iterator[Running]:
    """Token required, one extra allowed host, small body cap."""
    with serving(fake, token=TOKEN, allowed_hosts=("mcp.example.com",), max_body_bytes=CAP) as running:
        yield running


@pytest.fixture
async def raw(token_server: Running) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(base_url=token_server.base, timeout=10) as http:
        yield http


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# ---------------------------------------------------------------- the SDK client end to end


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_initializes_lists_and_searches(token_server: Running, mode: str) -> None:
    async with (
        httpx2.AsyncClient(headers=auth(), timeout=10) as http,
        Client(streamable_http_client(token_server.mcp_url, http_client=http), mode=mode) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"brave_web_search", "brave_web_search_help", "brave_web_search_status"} <= names
        result = await client.call_tool("brave_web_search", {"query": "hello world", "max_results": 3})
    assert not result.is_error
    envelope = result.structured_content
    assert envelope is not None
    assert envelope["api_version"] == "v1"
    web = envelope["sections"][0]
    assert web["key"] == "web"
    assert len(web["results"]) == 3
    assert all(r["url"].startswith("http") for r in web["results"])
    assert token_server.fake.hits("/web/search") == 1


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``exc`` (the SDK client raises through nested task groups)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


async def test_sdk_client_without_token_is_refused(token_server: Running) -> None:
    with pytest.raises(BaseException) as caught:  # checked below, through the task groups
        async with Client(token_server.mcp_url, mode="legacy") as client:
            await client.list_tools()
    errors = leaves(caught.value)
    assert any(isinstance(e, MCPError) and "error response" in str(e) for e in errors), errors
    assert token_server.fake.hits() == 0


async def test_loopback_server_needs_no_token(open_server: Running) -> None:
    async with Client(open_server.mcp_url, mode="legacy") as client:
        result = await client.call_tool("brave_web_search", {"query": "rust", "max_results": 2})
    assert not result.is_error
    assert open_server.fake.hits("/web/search") == 1


async def test_stateless_json_responses(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", json=INIT, headers=JSON_HEADERS | auth())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["serverInfo"]["name"] == "brave-search"


async def test_the_brave_key_never_comes_from_a_request(fake: FakeBrave) -> None:
    server = build_server(make_settings(api_key=None, api_key_source=None), transport=fake.mock_transport())
    smuggled = {"x-subscription-token": VALID_KEY, "x-brave-api-key": VALID_KEY, "brave-api-key": VALID_KEY}
    with serving_server(server) as running:
        async with (
            httpx2.AsyncClient(headers=smuggled, timeout=10) as http,
            Client(streamable_http_client(f"{running.mcp_url}?api_key={VALID_KEY}", http_client=http)) as client,
        ):
            result = await client.call_tool("brave_web_search", {"query": "q"})
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "MISSING_API_KEY"
    assert fake.hits() == 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_arguments_that_are_not_an_object_get_an_invalid_argument_envelope(
    token_server: Running, mode: str
) -> None:
    """A tools/call as the SDK client sends it in each protocol era, replayed with a string for its arguments."""
    sent: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request)

    async with httpx2.AsyncClient(headers=auth(), timeout=10, event_hooks={"request": [record]}) as http:
        async with Client(streamable_http_client(token_server.mcp_url, http_client=http), mode=mode) as client:
            await client.call_tool("brave_web_search_help", {"topic": "limits"})
        call = next(r for r in sent if json.loads(r.content).get("method") == "tools/call")
        body = json.loads(call.content)
        body["params"]["arguments"] = "not an object"
        headers = {k: v for k, v in call.headers.items() if k.lower() != "content-length"}
        response = await http.post(token_server.mcp_url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert (error["code"], error["details"]) == ("INVALID_ARGUMENT", {"field": "arguments"})
    assert error["message"] == "Invalid arguments: expected an object of named arguments, got string."


# ---------------------------------------------------------------- health


async def test_healthz_needs_no_token_and_says_only_status_and_version(raw: httpx2.AsyncClient) -> None:
    response = await raw.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__}
    foreign = await raw.get("/healthz", headers={"host": "evil.example"})
    assert foreign.json() == {"status": "ok", "version": __version__}


# ---------------------------------------------------------------- token


@pytest.mark.parametrize(
    "headers",
    [
        {},
        auth("wrong-token"),
        auth(TOKEN + "x"),
        auth(TOKEN[:-1]),
        {"authorization": f"Basic {TOKEN}"},
        {"authorization": TOKEN},
        {"authorization": "Bearer"},
    ],
    ids=["missing", "wrong", "longer", "prefix", "basic-scheme", "no-scheme", "empty"],
)
async def test_bad_or_missing_token_is_401_without_detail(
    raw: httpx2.AsyncClient, token_server: Running, headers: dict[str, str]
) -> None:
    response = await raw.post("/mcp", json=INIT, headers=JSON_HEADERS | headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.content == b""
    assert token_server.fake.hits() == 0


async def test_token_scheme_is_case_insensitive(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", json=PING, headers=JSON_HEADERS | {"authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200


async def test_token_never_reaches_logs_or_repr(raw: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    await raw.post("/mcp", json=PING, headers=JSON_HEADERS | auth())
    await raw.post("/mcp", json=PING, headers=JSON_HEADERS | auth(TOKEN + "wrong"))
    assert TOKEN not in caplog.text
    assert TOKEN not in repr(HttpOptions(token=TOKEN))


# ---------------------------------------------------------------- Host / Origin allowlist (the SDK's check)


async def test_foreign_host_is_421(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", json=PING, headers=JSON_HEADERS | auth() | {"host": "evil.example"})
    assert (response.status_code, response.text) == (421, "Invalid Host header")


async def test_a_caller_without_the_token_learns_nothing_of_the_allowlist(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", json=PING, headers=JSON_HEADERS | {"host": "evil.example:80"})
    assert (response.status_code, response.content) == (401, b"")


@pytest.mark.parametrize("origin", ["http://evil.example", "https://evil.example:8443", "null", "http://127.0.0.2"])
async def test_foreign_origin_is_403(raw: httpx2.AsyncClient, origin: str) -> None:
    response = await raw.post("/mcp", json=PING, headers=JSON_HEADERS | auth() | {"origin": origin})
    assert (response.status_code, response.text) == (403, "Invalid Origin header")


async def test_dns_rebinding_on_a_loopback_server_without_a_token_is_refused(open_server: Running) -> None:
    """The attack the check exists for: a page whose name resolves to 127.0.0.1 posting to the open loopback port."""
    async with httpx2.AsyncClient(base_url=open_server.base, timeout=10) as http:
        host = await http.post("/mcp", json=PING, headers=JSON_HEADERS | {"host": f"rebind.example:{open_server.port}"})
        origin = await http.post("/mcp", json=PING, headers=JSON_HEADERS | {"origin": "http://rebind.example"})
    assert (host.status_code, origin.status_code) == (421, 403)
    assert open_server.fake.hits() == 0


async def test_a_server_bound_to_every_address_still_checks_the_host(fake: FakeBrave) -> None:
    """Bound to 0.0.0.0 the SDK would not check by itself; the app hands it the allowlist (driven in process)."""
    options = HttpOptions(host="0.0.0.0", token=TOKEN, allowed_hosts=("mcp.example.com",))
    app = build_http_app(build_server(make_settings(), transport=fake.mock_transport()), options)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://mcp.example.com") as http,
    ):
        allowed = await http.post("/mcp", json=PING, headers=JSON_HEADERS | auth())
        foreign = await http.post("/mcp", json=PING, headers=JSON_HEADERS | auth() | {"host": "evil.example"})
    assert (allowed.status_code, foreign.status_code) == (200, 421)


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "localhost"},
        {"host": "localhost:9"},
        {"host": "[::1]:8080"},
        {"host": "mcp.example.com"},
        {"host": "mcp.example.com:443", "origin": "https://mcp.example.com"},
        {"origin": "http://localhost:5173"},
    ],
)
async def test_allowed_hosts_and_origins_pass(raw: httpx2.AsyncClient, headers: dict[str, str]) -> None:
    response = await raw.post("/mcp", json=PING, headers=JSON_HEADERS | auth() | headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == {}


# ---------------------------------------------------------------- body cap


def padded_ping(size: int) -> bytes:
    """A valid JSON-RPC ping of exactly ``size`` bytes (JSON allows trailing whitespace)."""
    body = json.dumps(PING).encode()
    return body + b" " * (size - len(body))


async def test_body_at_the_cap_is_served(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", content=padded_ping(CAP), headers=JSON_HEADERS | auth())
    assert response.status_code == 200


async def test_content_length_over_the_cap_is_413(raw: httpx2.AsyncClient) -> None:
    response = await raw.post("/mcp", content=padded_ping(CAP + 1), headers=JSON_HEADERS | auth())
    assert (response.status_code, response.text) == (413, "Request body too large")


async def test_a_body_over_the_cap_without_the_token_is_401(raw: httpx2.AsyncClient, token_server: Running) -> None:
    response = await raw.post("/mcp", content=padded_ping(CAP + 1), headers=JSON_HEADERS)
    assert (response.status_code, response.content) == (401, b"")


async def test_chunked_body_over_the_cap_is_413(raw: httpx2.AsyncClient, token_server: Running) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        body = padded_ping(3 * CAP)
        for start in range(0, len(body), 1024):
            yield body[start : start + 1024]

    response = await raw.post("/mcp", content=chunks(), headers=JSON_HEADERS | auth())
    assert response.status_code == 413
    assert token_server.fake.hits() == 0


async def test_chunked_body_under_the_cap_is_served(raw: httpx2.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        body = padded_ping(CAP - 10)
        yield body[:100]
        yield body[100:]

    response = await raw.post("/mcp", content=chunks(), headers=JSON_HEADERS | auth())
    assert response.status_code == 200
