"""The client's GETs on the kept-alive transport (the head built from bytes, the answer read without httpx2's models)
against a real loopback server: every answer must read exactly as through httpx2's own transport."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.models import errors
from testkit.clock import FakeClock
from tests.brave_client_support import call, settings, web_body
from tests.test_keepalive import RawSite

pytestmark = pytest.mark.anyio

LIMITS = (
    "X-RateLimit-Limit: 20\r\nX-RateLimit-Limit: 15000\r\nX-RateLimit-Remaining: 19, 14000\r\nX-RateLimit-Reset: 1, 9"
)
ERROR = {"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "Slow down.", "status": 429}}


def answer(status: str, body: bytes, *headers: str) -> bytes:
    """A whole HTTP/1.1 answer with a Content-Length."""
    head = "".join(f"{line}\r\n" for line in headers)
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


def deflated(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


PAGE = json.dumps(web_body()).encode()
ANSWERS = {
    "gzip page, limits on repeated lines": answer("200 OK", gzip.compress(PAGE), "Content-Encoding: gzip", LIMITS),
    "plain page": answer("200 OK", PAGE, "Content-Type: application/json"),
    "deflated page": answer("200 OK", deflated(PAGE), "Content-Encoding: deflate"),
    "not JSON": answer("200 OK", b"<html>proxy</html>"),
    "429, gzip error body": answer(
        "429 Too Many Requests", gzip.compress(json.dumps(ERROR).encode()), "Content-Encoding: gzip", "Retry-After: 3"
    ),
    "401, plain error body": answer(
        "401 Unauthorized", b'{"error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "Bad key."}}'
    ),
    "503, an HTML page": answer("503 Service Unavailable", b"<h1>down</h1>", "Content-Type: text/html"),
    "a corrupt gzip body": answer("200 OK", b"\x1f\x8bnot gzip", "Content-Encoding: gzip"),
}


async def outcome(reply: bytes, transport: httpx2.AsyncBaseTransport | None) -> tuple[Any, ...]:
    """What one search reads from ``reply``; through the kept-alive transport when ``transport`` is None."""
    async with RawSite(reply).running() as site:
        ft = FakeClock()
        client = BraveClient(settings(base_url=f"http://127.0.0.1:{site.port}"), transport=transport, clock=ft.clock)
        async with client:
            try:
                got = await call(client)
            except errors.BraveSearchError as exc:
                result: tuple[Any, ...] = ("error", type(exc), exc.message, exc.details)
            else:
                result = ("ok", got.data, got.rate_limit, got.body_bytes, got.raw_body)
            assert client._gets is not None
            fast = client._gets._kept_alive is not None
    assert fast is (transport is None)
    assert len(site.requests) == 1
    return result


@pytest.mark.parametrize("reply", ANSWERS.values(), ids=ANSWERS.keys())
async def test_every_answer_reads_as_through_httpx2s_own_transport(reply: bytes) -> None:
    ours = await outcome(reply, None)
    assert ours == await outcome(reply, httpx2.AsyncHTTPTransport())


async def test_the_kept_alive_path_reads_the_limits_and_the_error_brave_sent() -> None:
    """Not only alike: right. Two header lines of one name are one list; Brave's error JSON names the failure."""
    ok = await outcome(ANSWERS["gzip page, limits on repeated lines"], None)
    assert ok[0] == "ok" and ok[1] == web_body()
    assert (ok[2].per_second, ok[2].limit_month, ok[2].remaining_month) == (20, 15000, 14000)
    refused = await outcome(ANSWERS["429, gzip error body"], None)
    assert refused[1] is errors.RateLimited and "Slow down." in refused[2]
