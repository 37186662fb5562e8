"""BraveClient: Brave's error answers mapped to typed errors, unreadable bodies, and the body cap."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest

from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.models import errors
from brave_search_mcp.render.text import clean_text
from testkit.clock import FakeClock as FakeTime
from tests.brave_client_support import (
    Upstream,
    brave_error,
    call,
    error_reply,
    failing,
    make_client,
    web_body,
)

pytestmark = pytest.mark.anyio


# -- error mapping ------------------------------------------------------------------------------

PLAN_META = {"component": "authentication", "plan": "Free"}
RATE_META = {"plan": "Free", "rate_limit": 1, "rate_current": 1, "quota_limit": 2000, "quota_current": 15}


@pytest.mark.parametrize(
    ("reply", "endpoint", "cls", "retryable", "details"),
    [
        (
            error_reply(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."),
            Endpoint.WEB,
            errors.AuthFailed,
            False,
            {"status": 422, "brave_code": "SUBSCRIPTION_TOKEN_INVALID"},
        ),
        (
            error_reply(404, "SUBSCRIPTION_NOT_FOUND", "No subscription found.", {"component": "subscriptions"}),
            Endpoint.WEB,
            errors.AuthFailed,
            False,
            {"status": 404, "brave_code": "SUBSCRIPTION_NOT_FOUND", "component": "subscriptions"},
        ),
        (httpx2.Response(401), Endpoint.WEB, errors.AuthFailed, False, {"status": 401}),
        (
            error_reply(400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", PLAN_META),
            Endpoint.LLM_CONTEXT,
            errors.NotInPlan,
            False,
            {"status": 400, "plan": "Free", "plan_needed": "Search", "component": "authentication"},
        ),
        (
            error_reply(403, "RESOURCE_NOT_ALLOWED", "The user is not authorized to access this resource."),
            Endpoint.SUMMARIZER,
            errors.NotInPlan,
            False,
            {"status": 403, "brave_code": "RESOURCE_NOT_ALLOWED"},
        ),
        (
            error_reply(429, "QUOTA_LIMITED", "Request quota limit exceeded for plan.", {"quota_limit": 2000}),
            Endpoint.WEB,
            errors.QuotaExceeded,
            False,
            {"status": 429, "brave_code": "QUOTA_LIMITED", "quota_limit": 2000},
        ),
        (
            error_reply(429, "RATE_LIMITED", "Request rate limit exceeded for plan", RATE_META),
            Endpoint.WEB,
            errors.RateLimited,
            True,
            {"status": 429, "plan": "Free", "rate_limit": 1, "quota_limit": 2000, "quota_current": 15},
        ),
        (httpx2.Response(429, text="slow down"), Endpoint.WEB, errors.RateLimited, True, {"status": 429}),
        (
            error_reply(402, "USAGE_LIMIT_EXCEEDED", "Usage limit exceeded."),
            Endpoint.WEB,
            errors.QuotaExceeded,
            False,
            {"status": 402},
        ),
        (
            error_reply(404, "NOT_FOUND", "The requested product api version is not found."),
            Endpoint.WEB,
            errors.UpstreamError,
            False,
            {"status": 404},
        ),
        (
            httpx2.Response(502, text="<html><body><h1>502 Bad Gateway</h1></body></html>"),
            Endpoint.WEB,
            errors.UpstreamError,
            True,
            {"status": 502},
        ),
        (httpx2.Response(500), Endpoint.WEB, errors.UpstreamError, True, {"status": 500}),
        (
            httpx2.Response(302, headers={"Location": "https://elsewhere.test/"}),
            Endpoint.WEB,
            errors.UpstreamError,
            False,
            {"status": 302},
        ),
    ],
    ids=[
        "422-token-invalid",
        "404-no-subscription",
        "401-synthetic",
        "400-option-not-in-plan",
        "403-resource-not-allowed",
        "429-quota",
        "429-rate",
        "429-no-body",
        "402-usage",
        "404-other",
        "502-html",
        "500-empty",
        "302-no-follow",
    ],
)
async def test_brave_errors_map_to_typed_errors(
    reply: httpx2.Response,
    endpoint: Endpoint,
    cls: type[errors.BraveSearchError],
    retryable: bool,
    details: dict[str, Any],
) -> None:
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft, retries=0) as client:
        exc = await failing(client, endpoint)
    assert type(exc) is cls
    assert exc.retryable is retryable
    for name, value in details.items():
        assert exc.details[name] == value, name
    assert len(exc.message) <= 300
    assert "Traceback" not in exc.message
    assert "<html>" not in exc.message


async def test_not_in_plan_message_names_current_and_needed_plan() -> None:
    reply = error_reply(400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", PLAN_META)
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client, Endpoint.LLM_CONTEXT)
    assert "The option is not subscribed in the plan." in exc.message
    assert "Your plan: Free." in exc.message
    assert "needs Brave's Search plan" in exc.message


async def test_bare_403_is_reported_as_a_proxy_not_a_plan_problem() -> None:
    up, ft = Upstream(httpx2.Response(403, text="<html>Access denied</html>")), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.UpstreamError)
    assert not isinstance(exc, errors.NotInPlan)
    assert "proxy" in exc.message
    assert "firewall" in exc.message


async def test_validation_errors_keep_brave_field_message_and_input() -> None:
    meta = {
        "errors": [
            {
                "type": "greater_than_equal",
                "loc": ["query", "count"],
                "msg": "Input should be greater than or equal to 1",
                "input": "0",
                "ctx": {"ge": 1},
            }
        ]
    }
    up, ft = Upstream(error_reply(422, "VALIDATION", "Unable to validate request parameter(s)", meta)), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.UpstreamValidation)
    assert exc.retryable is False
    assert exc.details["errors"] == [
        {"field": "count", "message": "Input should be greater than or equal to 1", "input": "0"}
    ]
    assert "Unable to validate request parameter(s)" in exc.message
    assert "count: Input should be greater than or equal to 1" in exc.message


async def test_validation_error_list_is_capped_and_values_cut() -> None:
    long_msg = "m" * 500
    meta = {"errors": [{"loc": ["query", f"f{i}"], "msg": long_msg, "input": "i" * 900} for i in range(8)]}
    up, ft = Upstream(error_reply(422, "VALIDATION", "Unable to validate request parameter(s).", meta)), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    problems = exc.details["errors"]
    assert [p["field"] for p in problems] == ["f0", "f1", "f2", "f3", "f4"]
    assert all(len(p["message"]) <= 200 and len(p["input"]) <= 200 for p in problems)
    assert len(exc.message) <= 300


async def test_validation_with_empty_meta_still_maps() -> None:
    up, ft = Upstream(error_reply(422, "VALIDATION", "Unable to validate request parameter(s)")), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.UpstreamValidation)
    assert exc.details["errors"] == []


async def test_error_json_in_any_key_order_and_documented_list_form() -> None:
    alphabetical = json.dumps(
        {
            "error": {"code": "QUOTA_LIMITED", "detail": "Request quota limit exceeded for plan.", "status": 429},
            "type": "ErrorResponse",
        },
        sort_keys=True,
    )
    listed = {"type": "ErrorResponse", "errors": [brave_error(403, "RESOURCE_NOT_ALLOWED", "Not allowed.")["error"]]}
    up, ft = Upstream(httpx2.Response(429, text=alphabetical), httpx2.Response(403, json=listed)), FakeTime()
    async with make_client(up, ft) as client:
        quota = await failing(client, params=[("q", "a")])
        ft.now += 61  # Brave gave no reset time: the quota gate re-opens after a minute
        plan = await failing(client, params=[("q", "b")])
    assert isinstance(quota, errors.QuotaExceeded)
    assert isinstance(plan, errors.NotInPlan)


async def test_error_detail_is_sanitized_and_capped() -> None:
    detail = "bad\x00\x1b[31m thing\n\n" + "x" * 1000
    up, ft = Upstream(error_reply(404, "SOMETHING", detail)), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    assert "\x00" not in exc.message and "\x1b" not in exc.message and "\n" not in exc.message
    assert "bad thing xxx" in exc.message  # the ANSI sequence goes whole, not just its escape byte
    assert len(exc.message) <= 300


def test_clean_text_strips_controls_and_caps() -> None:
    assert clean_text("a\tb\r\nc\x07d\u200b", limit=300, markup=False) == "a b cd"
    assert clean_text("y" * 50, limit=10, markup=False) == "y" * 9 + "…"


# -- success bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html>maintenance</html>", "text/html"),
        (b"", "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b'{"type": "search", ', "application/json"),
    ],
    ids=["html", "empty", "json-list", "cut-off"],
)
async def test_unreadable_success_bodies_are_parse_errors_never_retried(body: bytes, content_type: str) -> None:
    up, ft = Upstream(httpx2.Response(200, content=body, headers={"Content-Type": content_type})), FakeTime()
    async with make_client(up, ft, retries=3) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ParseError)
    assert exc.retryable is False
    assert len(up.requests) == 1


async def test_gzip_encoded_answer_is_decoded() -> None:
    raw = json.dumps(web_body("zipped")).encode()
    reply = httpx2.Response(200, content=gzip.compress(raw), headers={"Content-Encoding": "gzip"})
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft) as client:
        response = await call(client)
    assert response.data["query"]["original"] == "zipped"
    assert response.body_bytes == len(raw)
    assert response.raw_body == raw


async def stream_of(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def test_truncated_gzip_is_a_parse_error() -> None:
    packed = gzip.compress(json.dumps(web_body()).encode())
    reply = httpx2.Response(200, content=stream_of(packed[: len(packed) // 2]), headers={"Content-Encoding": "gzip"})
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ParseError)
    assert len(up.requests) == 1


async def test_corrupt_gzip_is_a_parse_error() -> None:
    reply = httpx2.Response(200, content=stream_of(b"this is not gzip at all"), headers={"Content-Encoding": "gzip"})
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ParseError)
    assert "decompress" in exc.message
    assert len(up.requests) == 1


# -- body cap -----------------------------------------------------------------------------------

CAP = 16 * 1024


async def test_declared_oversize_body_is_refused_without_reading_it() -> None:
    pulled: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for i in range(100):
            pulled.append(i)
            yield b"x" * 1024

    reply = httpx2.Response(200, content=body(), headers={"Content-Length": str(CAP + 1)})
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft, max_response_bytes=CAP, retries=3) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ResponseTooLarge)
    assert exc.details["limit_bytes"] == CAP
    assert exc.details["content_length"] == CAP + 1
    assert pulled == []
    assert len(up.requests) == 1


async def test_streamed_oversize_body_is_cut_off_as_soon_as_it_passes_the_cap() -> None:
    pulled: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for i in range(10_000):
            pulled.append(i)
            yield b"y" * 1024

    up, ft = Upstream(httpx2.Response(200, content=body())), FakeTime()
    async with make_client(up, ft, max_response_bytes=CAP, retries=3) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ResponseTooLarge)
    assert exc.details == {"limit_bytes": CAP, "attempts": 1}
    assert len(pulled) <= CAP // 1024 + 2
    assert len(up.requests) == 1


async def test_huge_error_body_is_read_only_in_part() -> None:
    pulled: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for i in range(10_000):
            pulled.append(i)
            yield b"<p>" + b"z" * 1021

    up, ft = Upstream(httpx2.Response(502, content=body())), FakeTime()
    async with make_client(up, ft) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.UpstreamError)
    assert exc.details["status"] == 502
    assert len(pulled) <= 64 + 1


async def test_gzip_bomb_is_caught_by_the_decoded_size() -> None:
    bomb = gzip.compress(b"{" + b" " * (4 * 1024 * 1024))
    assert len(bomb) < CAP
    reply = httpx2.Response(200, content=bomb, headers={"Content-Encoding": "gzip"})
    up, ft = Upstream(reply), FakeTime()
    async with make_client(up, ft, max_response_bytes=CAP) as client:
        exc = await failing(client)
    assert isinstance(exc, errors.ResponseTooLarge)


async def test_body_exactly_at_the_cap_is_accepted() -> None:
    body = json.dumps({"type": "search", "pad": ""}).encode()
    body = body[:-2] + b" " * (CAP - len(body)) + body[-2:]
    assert len(body) == CAP
    up, ft = Upstream(httpx2.Response(200, content=body)), FakeTime()
    async with make_client(up, ft, max_response_bytes=CAP) as client:
        response = await call(client)
    assert response.body_bytes == CAP


async def test_a_streamed_post_whose_error_body_breaks_is_a_network_error_sent_once() -> None:
    """Reading a refused POST's body can fail like any read: a typed NETWORK_ERROR (not an internal error), no retry."""

    async def body() -> AsyncIterator[bytes]:
        yield b'{"type": "ErrorRes'
        raise httpx2.ReadError("connection reset by peer")

    up, ft = Upstream(httpx2.Response(503, content=body())), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        with anyio.fail_after(5), pytest.raises(errors.NetworkError) as info:
            async for _ in client.stream_post(Endpoint.CHAT, {"messages": []}):
                pass
    assert info.value.details["reason"] == "ReadError"
    assert info.value.details["attempts"] == 1
    assert len(up.requests) == 1
