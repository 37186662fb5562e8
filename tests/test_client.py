"""BraveClient: headers and key secrecy, rate-limit headers, cache through the client, counters and lifecycle."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.wire import parse_rate_limit
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.upstream.retry import parse_retry_after
from testkit.clock import FakeClock as FakeTime
from tests.brave_client_support import (
    BASE,
    KEY,
    Upstream,
    brave_error,
    call,
    error_reply,
    failing,
    make_client,
    ok,
    web_body,
)

pytestmark = pytest.mark.anyio


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


async def test_a_query_too_long_for_a_url_is_an_invalid_argument_and_nothing_is_sent() -> None:
    up, ft = Upstream(), FakeTime()
    async with make_client(up, ft) as client:
        with pytest.raises(errors.InvalidArgument, match="could not be encoded as a URL"):
            await call(client, params=[("q", "x" * 70_000)])
        assert client.counters()["web"].requests == 0
    assert up.requests == []


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
    assert parse_retry_after(str(31 * 86400)) == 31 * 86400.0  # a month's reset is a wait...
    for junk in (None, "", "soon", "-5", "nan", "inf", "1e308", str(31 * 86400 + 1)):  # ...longer is a broken proxy
        assert parse_retry_after(junk) is None
    assert parse_retry_after("Wed, 21 Oct 2099 07:28:07 GMT", "Wed, 21 Oct 2015 07:28:00 GMT") is None


def test_parse_rate_limit_leaves_out_and_names_figures_no_plan_has() -> None:
    """Issue 36: ``1e308, inf`` / ``nan, nan`` / ``inf, 1e308`` became the learned plan ``1e+308/s``. A figure that
    is unreadable or outside Brave's ranges (a plan of 1-10,000/s, a reset within a month) is None, and named."""
    poisoned = httpx2.Headers(
        {"x-ratelimit-limit": "1e308, inf", "x-ratelimit-remaining": "nan, nan", "x-ratelimit-reset": "inf, 1e308"}
    )
    info = parse_rate_limit(poisoned, 5.0)
    assert info is not None
    figures = (info.per_second, info.remaining_second, info.limit_month, info.remaining_month)
    assert figures == (None, None, None, None) and (info.reset_seconds, info.reset_month_seconds) == (None, None)
    assert info.ignored == (
        "X-RateLimit-Limit: '1e308, inf'",
        "X-RateLimit-Remaining: 'nan, nan'",
        "X-RateLimit-Reset: 'inf, 1e308'",
        "per_second=1e+308",
        "reset_month_seconds=1e+308",
    )
    ranges = {
        "x-ratelimit-limit": "0.5, 99999999999999",  # a plan below 1/s; more than 10,000/s for a whole month
        "x-ratelimit-policy": "0.5;w=1, 99999999999999;w=2678401",  # a window longer than a month
        "x-ratelimit-remaining": "10001, 5",
        "x-ratelimit-reset": "1, 2678401",
        "retry-after": "1e9",
    }
    info = parse_rate_limit(httpx2.Headers(ranges), 0.0)
    assert info is not None and (info.per_second, info.remaining_second, info.reset_month_seconds) == (None, None, None)
    assert (info.limit_month, info.remaining_month, info.reset_seconds) == (None, None, 1.0)
    assert [entry.split(":")[0].split("=")[0] for entry in info.ignored] == [
        *("X-RateLimit-Policy", "Retry-After", "per_second", "remaining_second"),
    ]  # (the month's figures went with its window)
    month = parse_rate_limit(httpx2.Headers({"x-ratelimit-limit": "20, 99999999999999"}), 0.0)
    assert month is not None and (month.per_second, month.limit_month, month.ignored) == (
        20.0,
        None,
        ("limit_month=1e+14",),
    )
    largest = {"x-ratelimit-limit": "10000, 0", "x-ratelimit-reset": f"1, {31 * 86400}", "retry-after": "60"}
    edge = parse_rate_limit(httpx2.Headers(largest), 0.0)
    assert edge is not None and edge.ignored == () and (edge.per_second, edge.limit_month) == (10000.0, 0)


async def test_impossible_rate_figures_are_logged_once_and_teach_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """One warning for a run of broken answers, not one per call; the plan stays unknown (each request probes)."""
    poisoned = {"X-RateLimit-Limit": "1e308, inf", "X-RateLimit-Reset": "inf, 1e308"}
    up, ft = Upstream(*(ok(headers=poisoned) for _ in range(5))), FakeTime()
    with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
        async with make_client(up, ft) as client:
            for n in range(5):
                await call(client, params=[("q", f"q{n}")])
            assert client.throttle_rate == (None, None)
    warned = [r.getMessage() for r in caplog.records if "rate-limit figures" in r.getMessage()]
    assert len(warned) == 1 and "X-RateLimit-Limit: '1e308, inf'" in warned[0]


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


async def test_rate_limit_headers_repeated_on_separate_lines_read_as_one_list() -> None:
    """A proxy may split a listed header into lines of one name: the plan is still read whole."""
    split = [
        ("X-RateLimit-Limit", "20"),
        ("X-RateLimit-Limit", "15000"),
        ("X-RateLimit-Remaining", "19, 14000"),
        ("X-RateLimit-Reset", "1, 9"),
    ]
    up, ft = Upstream(httpx2.Response(200, json=web_body(), headers=split)), FakeTime()
    async with make_client(up, ft) as client:
        response = await call(client)
    info = response.rate_limit
    assert info is not None
    assert (info.per_second, info.limit_month, info.remaining_month) == (20, 15000, 14000)


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
