"""BraveClient: headers and key secrecy, Brave error mapping, body cap, rate-limit headers, cache and counters."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from pydantic import SecretStr

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.wire import parse_rate_limit
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.upstream.retry import parse_retry_after
from testkit.clock import FakeClock as FakeTime
from testkit.scripted import Handler, ScriptedUpstream

pytestmark = pytest.mark.anyio

KEY = "test-key-not-real"
BASE = "https://brave.test"


class Upstream(ScriptedUpstream):
    """The scripted upstream, answering with a small web page when given no script."""

    def __init__(self, *replies: httpx2.Response | Exception | Handler) -> None:
        super().__init__(*(replies or (ok(),)))


@pytest.fixture
def client_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Capture the client's DEBUG lines even if another test configured the package logger not to propagate."""
    logger = logging.getLogger("brave_search_mcp.brave.client")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # records reach caplog once, through the handler attached here
    logger.addHandler(caplog.handler)
    caplog.handler.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)
        logger.propagate = propagate


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "api_key": SecretStr(KEY),
        "api_key_source": "BRAVE_SEARCH_API_KEY",
        "base_url": BASE,
        "retries": 0,
    }
    values.update(overrides)
    return Settings(**values)


def make_client(up: Upstream, ft: FakeTime, **overrides: Any) -> BraveClient:
    up.clock = ft.clock
    return BraveClient(
        settings(**overrides),
        transport=httpx2.MockTransport(up.handle),
        clock=ft.clock,
        sleep=ft.sleep,
        rng=lambda: 0.5,
    )


def web_body(query: str = "hello world") -> dict[str, Any]:
    return {
        "type": "search",
        "query": {"original": query},
        "web": {"type": "search", "results": [{"title": "Hello", "url": "https://example.com/", "description": "x"}]},
    }


def ok(body: Any = None, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(200, json=web_body() if body is None else body, headers=headers)


def brave_error(status: int, code: str, detail: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {
            "id": "00000000-0000-4000-8000-000000000000",
            "status": status,
            "code": code,
            "detail": detail,
            "meta": meta or {},
        },
        "time": 1700000000,
    }


def error_reply(status: int, code: str, detail: str, meta: dict[str, Any] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=brave_error(status, code, detail, meta))


async def call(client: BraveClient, endpoint: Endpoint = Endpoint.WEB, **kwargs: Any) -> Any:
    params = kwargs.pop("params", [("q", "hello world")])
    with anyio.fail_after(5):
        return await client.get(endpoint, params, **kwargs)


async def call_query(client: BraveClient, query: str) -> None:
    await call(client, params=[("q", query)])


async def failing(client: BraveClient, endpoint: Endpoint = Endpoint.WEB, **kwargs: Any) -> errors.BraveSearchError:
    with pytest.raises(errors.BraveSearchError) as info:
        await call(client, endpoint, **kwargs)
    return info.value


# -- requests -----------------------------------------------------------------------------------


async def test_every_request_carries_token_gzip_json_and_user_agent() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        response = await call(client, params=[("q", "hello world"), ("count", "5")])
    request = up.requests[0]
    assert request.headers["X-Subscription-Token"] == KEY
    assert request.headers["Accept"] == "application/json"
    assert request.headers["Accept-Encoding"] == "gzip"
    assert request.headers["User-Agent"] == f"brave-search-mcp/{__version__} (+https://github.com/brave-search-mcp)"
    assert request.method == "GET"
    assert str(request.url) == f"{BASE}/res/v1/web/search?q=hello+world&count=5"
    assert response.request_url == str(request.url)
    assert KEY not in response.request_url
    assert response.data == web_body()
    assert (response.status, response.cached, response.attempts) == (200, False, 1)
    assert response.body_bytes == len(response.raw_body) > 0


async def test_repeated_params_are_all_sent() -> None:
    up, ft = Upstream(ok({"type": "local_pois", "results": []})), FakeTime()
    async with make_client(up, ft) as client:
        await call(client, Endpoint.LOCAL_POIS, params=[("ids", "a=1"), ("ids", "b")])
    assert up.requests[0].url.params.get_list("ids") == ["a=1", "b"]
    assert up.requests[0].url.path == "/res/v1/local/pois"


async def test_missing_key_fails_before_any_request_or_throttle_wait() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft, api_key=None, api_key_source=None) as client:
        for _ in range(3):
            exc = await failing(client)
            assert isinstance(exc, errors.MissingApiKey)
    assert up.requests == []
    assert ft.sleeps == []
    for name in ("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY", "BRAVE_API_KEY_FILE"):
        assert name in exc.message
    assert client.counters()["web"].requests == 0
    assert client.counters()["web"].by_code == {"MISSING_API_KEY": 3}


async def test_key_never_appears_in_messages_or_logs(client_logs: pytest.LogCaptureFixture) -> None:
    echo = error_reply(422, "SUBSCRIPTION_TOKEN_INVALID", f"The provided subscription token {KEY} is invalid.")
    up, ft = Upstream(ok(), echo, httpx2.ConnectError(f"refused for {KEY}")), FakeTime()
    async with make_client(up, ft, retries=0) as client:
        await call(client, params=[("q", "one")])
        auth = await failing(client, params=[("q", "two")])
        network = await failing(client, params=[("q", "three")])
    assert isinstance(auth, errors.AuthFailed)
    assert isinstance(network, errors.NetworkError)
    for exc in (auth, network):
        assert KEY not in exc.message
        assert KEY not in repr(exc.details)
        assert "[redacted]" in exc.message
    assert len(client_logs.records) >= 3, "expected debug lines per attempt"
    for record in client_logs.records:
        assert KEY not in record.getMessage()


async def test_one_debug_line_per_attempt(client_logs: pytest.LogCaptureFixture) -> None:
    up, ft = Upstream(httpx2.Response(503, text="busy"), ok()), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        await call(client)
    lines = [r.getMessage() for r in client_logs.records if r.getMessage().startswith("brave request")]
    assert len(lines) == 2
    assert "endpoint=web attempt=1 status=503 outcome=UPSTREAM_ERROR" in lines[0]
    assert "endpoint=web attempt=2 status=200 outcome=ok" in lines[1]
    assert all("duration_ms=" in line for line in lines)


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


# -- rate-limit headers and adaptation ----------------------------------------------------------

FREE_HEADERS = {
    "X-RateLimit-Limit": "1, 2000",
    "X-RateLimit-Policy": "1;w=1, 2000;w=2592000",
    "X-RateLimit-Remaining": "1, 1984",
    "X-RateLimit-Reset": "1, 1419704",
}


def test_parse_rate_limit_reads_both_windows() -> None:
    info = parse_rate_limit(httpx2.Headers(FREE_HEADERS), 12.5)
    assert info == RateLimitInfo(
        per_second=1.0,
        remaining_second=1,
        limit_month=2000,
        remaining_month=1984,
        reset_seconds=1.0,
        reset_month_seconds=1419704.0,
        observed_at=12.5,
    )


def test_parse_rate_limit_follows_policy_order_and_tolerates_junk() -> None:
    headers = httpx2.Headers(
        {
            "x-ratelimit-limit": "0, 50",
            "x-ratelimit-policy": "0;w=2678400, 50;w=1",
            "x-ratelimit-remaining": "0, 49",
            "x-ratelimit-reset": "2558678, soon",
        }
    )
    info = parse_rate_limit(headers, 0.0)
    assert info is not None
    assert (info.per_second, info.remaining_second, info.reset_seconds) == (50.0, 49, None)
    assert (info.limit_month, info.remaining_month, info.reset_month_seconds) == (0, 0, 2558678.0)
    assert parse_rate_limit(httpx2.Headers({"content-type": "application/json"}), 0.0) is None
    limit_only = parse_rate_limit(httpx2.Headers({"x-ratelimit-limit": "20, 0"}), 0.0)
    assert limit_only is not None and limit_only.per_second == 20.0


def test_parse_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:07 GMT", "Wed, 21 Oct 2015 07:28:00 GMT") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    for junk in (None, "", "soon", "-5", "nan", "inf"):
        assert parse_retry_after(junk) is None


async def test_last_rate_limit_comes_from_success_and_from_429() -> None:
    limited = {**FREE_HEADERS, "X-RateLimit-Remaining": "0, 1983"}
    up = Upstream(
        ok(headers=FREE_HEADERS), httpx2.Response(429, json=brave_error(429, "RATE_LIMITED", "x"), headers=limited)
    )
    ft = FakeTime()
    async with make_client(up, ft) as client:
        before = client.last_rate_limit
        response = await call(client, params=[("q", "a")])
        after_success = client.last_rate_limit
        await failing(client, params=[("q", "b")])
        after_429 = client.last_rate_limit
    assert before is None
    assert after_success is not None and response.rate_limit == after_success
    assert (after_success.remaining_second, after_success.remaining_month) == (1, 1984)
    assert after_429 is not None
    assert (after_429.remaining_second, after_429.remaining_month) == (0, 1983)


# -- cache through the client -------------------------------------------------------------------


async def test_cache_hit_costs_no_request_and_no_throttle_slot() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        first = await call(client, params=[("q", "Hello World")])
        second = await call(client, params=[("q", "  hello   world ")])
        assert len(up.requests) == 1
        assert ft.sleeps == []  # at 1 rps a second request would have waited
        assert (second.cached, second.attempts) == (True, 0)
        assert second.data == first.data
        assert second.request_url == f"{BASE}/res/v1/web/search?q=++hello+++world+"
        third = await call(client, params=[("q", "hello world")])
        assert third.data is first.data  # hits share the decoded body (read-only by contract): no re-decoding
        assert third.body_id == first.body_id != 0  # one body identity, so derived pages are reused
        stats = client.cache_stats()
        assert (stats.hits, stats.misses, stats.entries, stats.max_entries, stats.ttl_seconds) == (2, 1, 1, 256, 300.0)
        counters = client.counters()["web"]
        assert (counters.requests, counters.cache_hits, counters.errors) == (1, 2, 0)


async def test_use_cache_false_bypasses_the_cache() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        await call(client)
        response = await call(client, use_cache=False)
    assert response.cached is False
    assert len(up.requests) == 2


async def test_freshness_requests_expire_after_a_minute_others_after_the_ttl() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        fresh = [("q", "news"), ("freshness", "pd")]
        plain = [("q", "news")]
        await call(client, params=fresh)
        await call(client, params=plain)
        ft.now += 61.0
        assert (await call(client, params=fresh)).cached is False
        assert (await call(client, params=plain)).cached is True
        ft.now += 240.0
        assert (await call(client, params=plain)).cached is False
    assert len(up.requests) == 4


async def test_errors_are_not_cached() -> None:
    up, ft = Upstream(httpx2.Response(500), ok()), FakeTime()
    async with make_client(up, ft) as client:
        await failing(client)
        response = await call(client)
    assert response.cached is False
    assert len(up.requests) == 2


async def test_identical_concurrent_calls_share_one_upstream_request() -> None:
    gate = anyio.Event()

    async def slow(request: httpx2.Request) -> httpx2.Response:
        await gate.wait()
        return ok()

    up, ft = Upstream(slow), FakeTime()
    results: list[Any] = []
    async with make_client(up, ft) as client:

        async def one() -> None:
            results.append(await call(client))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
                for _ in range(20):
                    await anyio.lowlevel.checkpoint()
                gate.set()
        stats = client.cache_stats()
    assert len(up.requests) == 1
    assert len(results) == 5
    assert all(r.data == web_body() for r in results)
    assert sum(r.attempts for r in results) == 5  # each reports the one shared attempt
    assert (stats.misses, stats.shared) == (1, 4)
    assert len({id(r.data) for r in results}) == 1  # one decoded body, shared read-only


# -- counters and lifecycle ---------------------------------------------------------------------


async def test_counters_per_endpoint() -> None:
    quota = error_reply(429, "QUOTA_LIMITED", "Request quota limit exceeded for plan.")
    up, ft = Upstream(ok(), quota, ok({"type": "news", "results": []})), FakeTime()
    async with make_client(up, ft) as client:
        await call(client, params=[("q", "a")])
        await call(client, params=[("q", "a")])
        await failing(client, params=[("q", "b")])
        ft.now += 61  # past the quota gate (no reset time given)
        await call(client, Endpoint.NEWS, params=[("q", "a")])
        counters = client.counters()
    assert set(counters) == {
        "web",
        "news",
        "images",
        "videos",
        "summarizer",
        "local_pois",
        "local_descriptions",
        "llm_context",
        "place_search",
        "answers",
    }
    web = counters["web"]
    assert (web.requests, web.errors, web.cache_hits, web.by_code) == (2, 1, 1, {"QUOTA_EXCEEDED": 1})
    assert (counters["news"].requests, counters["news"].errors) == (1, 0)
    counters["web"].by_code["X"] = 1  # a snapshot: changing it does not change the client
    assert client.counters()["web"].by_code == {"QUOTA_EXCEEDED": 1}


async def test_closing_the_client_ends_calls_in_flight_with_cancelled() -> None:
    never = anyio.Event()

    async def hang(request: httpx2.Request) -> httpx2.Response:
        await never.wait()
        return ok()

    up, ft = Upstream(hang), FakeTime()
    outcome: list[BaseException] = []
    client = make_client(up, ft, retries=3)
    await client.__aenter__()

    async def caller() -> None:
        try:
            await client.get(Endpoint.WEB, [("q", "x")])
        except errors.BraveSearchError as exc:
            outcome.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            for _ in range(100):
                if up.requests:
                    break
                await anyio.lowlevel.checkpoint()
            await client.aclose()
    assert len(outcome) == 1
    assert isinstance(outcome[0], errors.Cancelled)
    assert len(up.requests) == 1
    later = await failing(client)
    assert isinstance(later, errors.Cancelled)
    assert client.counters()["web"].by_code == {"CANCELLED": 2}


async def test_client_works_without_entering_the_context() -> None:
    up, ft = Upstream(), FakeTime()
    client = make_client(up, ft)
    try:
        response = await call(client)
    finally:
        await client.aclose()
    assert response.status == 200
