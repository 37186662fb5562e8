"""The stateless /mcp endpoint takes POSTed JSON only, and caps the requests in flight: real requests, real server."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx2
import pytest
from anyio.to_thread import run_sync

from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.faces.http import HttpOptions
from brave_search_mcp.faces.mcp_server import build_server
from testkit.brave.brave import FakeBrave
from testkit.settings import make_settings

from .test_http import CAP, JSON_HEADERS, PING, TOKEN, Running, auth, padded_ping, serving, serving_server

pytestmark = pytest.mark.anyio

PROMPT_SECONDS = 5.0  # a refusal is immediate; this only bounds a regression that streams forever
HELD_SECONDS = 10.0
SEARCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "brave_web_search", "arguments": {"query": "held", "max_results": 1}},
}


@pytest.fixture
async def raw(fake: FakeBrave) -> AsyncIterator[httpx2.AsyncClient]:
    with serving(fake, token=TOKEN, max_body_bytes=CAP) as running:
        async with httpx2.AsyncClient(base_url=running.base, timeout=10) as http:
            yield http


# ---------------------------------------------------------------- methods


async def test_get_with_a_valid_token_is_405_at_once_not_an_endless_stream(raw: httpx2.AsyncClient) -> None:
    # Before: 200 text/event-stream that never ended (a curl hung for 24 minutes); the transport is stateless.
    with anyio.fail_after(PROMPT_SECONDS):
        response = await raw.get("/mcp", headers=auth() | {"accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.content == b""


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"])
async def test_other_methods_are_405_with_allow_post(raw: httpx2.AsyncClient, method: str) -> None:
    headers = auth() | {"accept": "application/json, text/event-stream", "mcp-session-id": "abc"}
    with anyio.fail_after(PROMPT_SECONDS):
        response = await raw.request(method, "/mcp", headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


async def test_modern_protocol_get_is_405_too(raw: httpx2.AsyncClient) -> None:
    headers = auth() | {"accept": "text/event-stream", "mcp-protocol-version": "2026-07-28"}
    with anyio.fail_after(PROMPT_SECONDS):
        response = await raw.get("/mcp", headers=headers)
    assert (response.status_code, response.headers["allow"]) == (405, "POST")


async def test_a_wrong_method_without_a_token_is_401_first(raw: httpx2.AsyncClient) -> None:
    with anyio.fail_after(PROMPT_SECONDS):
        response = await raw.get("/mcp", headers={"accept": "text/event-stream"})
    assert response.status_code == 401


async def test_other_paths_keep_their_404(raw: httpx2.AsyncClient) -> None:
    response = await raw.get("/elsewhere", headers=auth())
    assert response.status_code == 404


# ---------------------------------------------------------------- content type


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"],
)
async def test_a_post_that_is_not_json_is_415(raw: httpx2.AsyncClient, content_type: str | None) -> None:
    headers = auth() | {"accept": "application/json, text/event-stream"}
    if content_type is not None:
        headers["content-type"] = content_type
    response = await raw.post("/mcp", content=padded_ping(40), headers=headers)
    assert response.status_code == 415
    assert response.content == b""


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON; charset=utf-8", "application/json ;charset=UTF-8"]
)
async def test_json_with_parameters_or_other_case_is_accepted(raw: httpx2.AsyncClient, content_type: str) -> None:
    headers = auth() | {"accept": "application/json, text/event-stream", "content-type": content_type}
    response = await raw.post("/mcp", content=padded_ping(40), headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"] == {}


# ---------------------------------------------------------------- requests in flight


class HeldUpstream(httpx2.AsyncBaseTransport):
    """The fake Brave, but each request waits (in a worker thread) until the test releases it."""

    def __init__(self, fake: FakeBrave) -> None:
        self.inner = fake.mock_transport()
        self.arrived = threading.Event()
        self.release = threading.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Say the request arrived, wait to be released, then answer as the fake."""
        self.arrived.set()
        await run_sync(self.release.wait, HELD_SECONDS)
        return await self.inner.handle_async_request(request)


@pytest.fixture
def held(fake: FakeBrave) -> Iterator[tuple[Running, HeldUpstream]]:
    upstream = HeldUpstream(fake)
    server = build_server(make_settings(), transport=upstream)
    try:
        with serving_server(server, fake, max_in_flight=1, max_body_bytes=CAP) as running:
            yield running, upstream
    finally:
        upstream.release.set()


async def test_a_request_over_the_in_flight_cap_is_503_with_retry_after(
    held: tuple[Running, HeldUpstream],
) -> None:
    running, upstream = held
    statuses: list[int] = []
    async with httpx2.AsyncClient(base_url=running.base, timeout=HELD_SECONDS) as http:

        async def search() -> None:
            response = await http.post("/mcp", json=SEARCH, headers=JSON_HEADERS)
            statuses.append(response.status_code)

        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            assert await run_sync(upstream.arrived.wait, HELD_SECONDS)  # the one slot is taken by the search
            with anyio.fail_after(PROMPT_SECONDS):
                refused = await http.post("/mcp", json=PING, headers=JSON_HEADERS)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.content == b""
            upstream.release.set()
        assert statuses == [200]
        after = await http.post("/mcp", json=PING, headers=JSON_HEADERS)  # the slot was given back
        assert after.status_code == 200
    assert running.fake.hits("/web/search") == 1


async def test_refused_and_failed_requests_give_their_slot_back(fake: FakeBrave) -> None:
    with serving(fake, max_in_flight=1, max_body_bytes=CAP) as running:
        async with httpx2.AsyncClient(base_url=running.base, timeout=10) as http:

            async def chunks() -> AsyncIterator[bytes]:
                body = padded_ping(3 * CAP)
                for start in range(0, len(body), 1024):
                    yield body[start : start + 1024]

            over = await http.post("/mcp", content=chunks(), headers=JSON_HEADERS)  # counted, then 413 mid-body
            bad = await http.post("/mcp", content=b"{not json", headers=JSON_HEADERS)  # the SDK answers 400
            wrong = await http.get("/mcp")  # refused before the cap
            ok = [await http.post("/mcp", json=PING, headers=JSON_HEADERS) for _ in range(3)]
    assert (over.status_code, bad.status_code, wrong.status_code) == (413, 400, 405)
    assert [r.status_code for r in ok] == [200, 200, 200]


async def test_healthz_is_not_counted_against_the_cap(held: tuple[Running, HeldUpstream]) -> None:
    running, upstream = held
    async with httpx2.AsyncClient(base_url=running.base, timeout=HELD_SECONDS) as http:

        async def search() -> None:
            await http.post("/mcp", json=SEARCH, headers=JSON_HEADERS)

        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            assert await run_sync(upstream.arrived.wait, HELD_SECONDS)
            health = await http.get("/healthz")
            upstream.release.set()
    assert health.status_code == 200


# ---------------------------------------------------------------- the setting


def test_in_flight_cap_setting_has_bounds_and_names_its_variable() -> None:
    assert Settings().http_max_in_flight == 100
    assert Settings.from_env({"BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT": "7"}).http_max_in_flight == 7
    for bad in ("0", "10001", "many"):
        with pytest.raises(ConfigError, match="BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT"):
            Settings.from_env({"BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT": bad})


@pytest.mark.parametrize("value", [0, -1, 10_001])
def test_in_flight_cap_option_is_checked(value: int) -> None:
    with pytest.raises(ValueError, match="BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT"):
        HttpOptions(max_in_flight=value)
