"""Retries: only what a later try can fix, with the waits Brave asks for, measured on a fake clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient, BraveResponse
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from testkit.brave.auth import VALID_KEY
from testkit.clock import FakeClock as FakeTime
from testkit.scripted import ScriptedUpstream as Upstream

pytestmark = pytest.mark.anyio

KEY = VALID_KEY


def rng_sequence(*values: float) -> Callable[[], float]:
    source: Iterator[float] = iter(values)
    return lambda: next(source)


def make_client(up: Upstream, ft: FakeTime, *, rng: Callable[[], float] = lambda: 0.5, **overrides: Any) -> BraveClient:
    values: dict[str, Any] = {
        "api_key": SecretStr(KEY),
        "api_key_source": "BRAVE_SEARCH_API_KEY",
        "base_url": "https://brave.test",
        "retries": 3,
        "retry_base_ms": 250,
        "retry_max_ms": 5000,
        # A generous explicit rate keeps throttle waits out of the recorded sleeps.
        "rate_limit": 1000.0,
        "burst": 1000,
    }
    values.update(overrides)
    up.clock = ft.clock
    return BraveClient(
        Settings(**values), transport=httpx2.MockTransport(up.handle), clock=ft.clock, sleep=ft.sleep, rng=rng
    )


def ok() -> httpx2.Response:
    return httpx2.Response(200, json={"type": "search", "web": {"type": "search", "results": []}})


def brave_429(code: str = "RATE_LIMITED", headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {
        "type": "ErrorResponse",
        "error": {"id": "x", "status": 429, "code": code, "detail": "limit", "meta": {"component": "rate_limiter"}},
    }
    return httpx2.Response(429, json=body, headers=headers)


def brave_error(status: int, code: str) -> httpx2.Response:
    body = {"type": "ErrorResponse", "error": {"status": status, "code": code, "detail": "no", "meta": {}}}
    return httpx2.Response(status, json=body)


async def get(client: BraveClient) -> BraveResponse:
    with anyio.fail_after(5):
        return await client.get(Endpoint.WEB, [("q", "retry me")], use_cache=False)


async def get_error(client: BraveClient) -> errors.BraveSearchError:
    with pytest.raises(errors.BraveSearchError) as info:
        await get(client)
    return info.value


# -- waits --------------------------------------------------------------------------------------


async def test_retry_after_seconds_is_obeyed() -> None:
    up, ft = Upstream(brave_429(headers={"Retry-After": "2"}), ok()), FakeTime()
    async with make_client(up, ft) as client:
        response = await get(client)
    assert response.attempts == 2
    assert ft.sleeps == [2.0]
    assert up.times == [1000.0, 1002.0]


async def test_retry_after_http_date_is_measured_against_the_date_header() -> None:
    headers = {"Retry-After": "Wed, 21 Oct 2015 07:28:07 GMT", "Date": "Wed, 21 Oct 2015 07:28:00 GMT"}
    up, ft = Upstream(httpx2.Response(503, headers=headers), ok()), FakeTime()
    async with make_client(up, ft) as client:
        await get(client)
    assert ft.sleeps == [7.0]


async def test_rate_limit_reset_is_used_on_429_without_retry_after() -> None:
    headers = {"X-RateLimit-Reset": "1, 1419704", "X-RateLimit-Remaining": "0, 100"}
    up, ft = Upstream(brave_429(headers=headers), ok()), FakeTime()
    async with make_client(up, ft) as client:
        await get(client)
    assert ft.sleeps == [1.0]
    assert up.times == [1000.0, 1001.0]


async def test_exponential_backoff_with_jitter_from_the_injected_rng() -> None:
    up, ft = Upstream(httpx2.Response(503), httpx2.Response(503), httpx2.Response(503), ok()), FakeTime()
    async with make_client(up, ft, rng=rng_sequence(0.0, 0.5, 0.999)) as client:
        response = await get(client)
    assert response.attempts == 4
    # base 250 ms doubling: 0.25*0.8, 0.5*1.0, 1.0*1.1996
    assert ft.sleeps == pytest.approx([0.2, 0.5, 1.1996])


async def test_backoff_is_capped_at_retry_max() -> None:
    up, ft = Upstream(httpx2.Response(500)), FakeTime()
    async with make_client(up, ft, retries=4, retry_base_ms=1000, retry_max_ms=1500) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.UpstreamError)
    assert exc.details["attempts"] == 5
    assert ft.sleeps == pytest.approx([1.0, 1.5, 1.5, 1.5])


async def test_a_429_makes_concurrent_callers_back_off_too() -> None:
    headers = {"X-RateLimit-Reset": "1, 50"}
    up, ft = Upstream(brave_429(headers=headers), ok()), FakeTime()
    async with make_client(up, ft, retries=0) as client:
        exc = await get_error(client)
        assert isinstance(exc, errors.RateLimited)
        await get(client)  # a different caller: the throttle holds it until the window resets
    assert up.times == [1000.0, 1001.0]
    assert ft.sleeps == [1.0]


# -- what is retried ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_server_errors_are_retried(status: int) -> None:
    up, ft = Upstream(httpx2.Response(status, text="<html>oops</html>"), ok()), FakeTime()
    async with make_client(up, ft) as client:
        response = await get(client)
    assert response.attempts == 2
    assert up.count == 2


@pytest.mark.parametrize(
    "reply",
    [
        brave_429("QUOTA_LIMITED"),
        brave_error(422, "VALIDATION"),
        brave_error(422, "SUBSCRIPTION_TOKEN_INVALID"),
        brave_error(400, "OPTION_NOT_IN_PLAN"),
        brave_error(403, "RESOURCE_NOT_ALLOWED"),
        brave_error(404, "SUBSCRIPTION_NOT_FOUND"),
        httpx2.Response(401),
        httpx2.Response(403, text="denied"),
        httpx2.Response(501),
        httpx2.Response(200, text="not json"),
    ],
    ids=[
        "quota",
        "422-validation",
        "422-token",
        "400-plan",
        "403-plan",
        "404-subscription",
        "401",
        "403",
        "501",
        "parse",
    ],
)
async def test_permanent_failures_are_never_retried(reply: httpx2.Response) -> None:
    up, ft = Upstream(reply, ok()), FakeTime()
    async with make_client(up, ft) as client:
        exc = await get_error(client)
    assert up.count == 1
    assert ft.sleeps == []
    assert exc.details["attempts"] == 1
    # The envelope never invites a retry the policy itself would not make (a 501 included).
    assert exc.retryable is False


async def test_rate_limit_still_hit_after_all_retries_is_retryable_rate_limited() -> None:
    up, ft = Upstream(brave_429()), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.RateLimited)
    assert exc.retryable is True
    assert exc.code == errors.ErrorCode.RATE_LIMITED
    assert up.count == 3
    assert exc.details["attempts"] == 3
    assert client.counters()["web"].requests == 3
    assert client.counters()["web"].by_code == {"RATE_LIMITED": 1}


@pytest.mark.parametrize(
    "reply",
    [brave_429(headers={"Retry-After": "120"}), httpx2.Response(503, headers={"Retry-After": "3600"})],
    ids=["429", "503"],
)
async def test_a_wait_longer_than_a_minute_gives_up_at_once(reply: httpx2.Response) -> None:
    up, ft = Upstream(reply, ok()), FakeTime()
    async with make_client(up, ft) as client:
        exc = await get_error(client)
    assert exc.retryable is True
    assert exc.details["retry_after_seconds"] in (120.0, 3600.0)
    assert up.count == 1
    assert ft.sleeps == []


async def test_zero_retries_means_one_attempt() -> None:
    up, ft = Upstream(httpx2.Response(503), ok()), FakeTime()
    async with make_client(up, ft, retries=0) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.UpstreamError)
    assert exc.retryable is True
    assert up.count == 1


# -- timeouts and network failures ---------------------------------------------------------------


async def test_transport_timeouts_are_retried_then_reported_as_timeout() -> None:
    up, ft = Upstream(httpx2.ReadTimeout("read timed out")), FakeTime()
    async with make_client(up, ft, retries=2) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.UpstreamTimeout)
    assert exc.retryable is True
    assert exc.code == errors.ErrorCode.TIMEOUT
    assert up.count == 3


async def test_a_timeout_then_success_recovers() -> None:
    up, ft = Upstream(httpx2.ConnectTimeout("connect timed out"), ok()), FakeTime()
    async with make_client(up, ft) as client:
        response = await get(client)
    assert response.attempts == 2


@pytest.mark.parametrize(
    "failure",
    [
        httpx2.ConnectError("[Errno 111] Connection refused"),
        httpx2.ReadError("connection reset by peer"),
        httpx2.RemoteProtocolError("server disconnected without sending a response"),
        httpx2.WriteError("broken pipe"),
    ],
    ids=["refused", "reset", "protocol", "write"],
)
async def test_network_errors_are_retried_and_reported_without_tracebacks(failure: Exception) -> None:
    up, ft = Upstream(failure), FakeTime()
    async with make_client(up, ft, retries=1) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.NetworkError)
    assert exc.retryable is True
    assert up.count == 2
    assert type(failure).__name__ in exc.message
    assert "Traceback" not in exc.message


@pytest.mark.parametrize(
    "failure",
    [
        httpx2.LocalProtocolError("Illegal header value b'x\\n'"),
        httpx2.UnsupportedProtocol("Request URL has no scheme"),
    ],
    ids=["local-protocol", "unsupported-protocol"],
)
async def test_a_request_that_cannot_be_sent_is_tried_once(failure: Exception) -> None:
    """Our own request was at fault, not the network: every try would fail alike, so no second one is made."""
    up, ft = Upstream(failure, ok()), FakeTime()
    async with make_client(up, ft, retries=3) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.NetworkError) and exc.retryable is False
    assert exc.details == {"reason": type(failure).__name__, "attempts": 1}
    assert up.count == 1 and ft.sleeps == []


async def test_network_error_then_success_recovers() -> None:
    up, ft = Upstream(httpx2.ConnectError("refused"), ok()), FakeTime()
    async with make_client(up, ft) as client:
        response = await get(client)
    assert response.attempts == 2
    assert len(ft.sleeps) == 1


# The two tests below need a real deadline: anyio's per-attempt deadline runs on the event loop's clock,
# which a fake clock cannot move. They use a 20 ms timeout against a handler that would wait forever.


async def test_an_attempt_that_never_answers_times_out() -> None:
    never = anyio.Event()

    async def hang(request: httpx2.Request) -> httpx2.Response:
        await never.wait()
        return ok()

    up, ft = Upstream(hang), FakeTime()
    async with make_client(up, ft, retries=0, timeout_seconds=0.02) as client:
        exc = await get_error(client)
    assert isinstance(exc, errors.UpstreamTimeout)
    assert exc.details["timeout_seconds"] == 0.02


async def test_a_slowly_dripping_body_cannot_outlast_the_attempt_timeout() -> None:
    never = anyio.Event()

    async def drip() -> AsyncIterator[bytes]:
        yield b'{"type": "search", '
        await never.wait()
        yield b"}"

    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=drip())

    up, ft = Upstream(handler, ok()), FakeTime()
    async with make_client(up, ft, retries=1, timeout_seconds=0.02) as client:
        response = await get(client)
    assert response.attempts == 2  # the dripping attempt timed out and the retry succeeded


# -- cancellation -------------------------------------------------------------------------------


async def test_cancelling_during_backoff_stops_at_once_without_more_requests() -> None:
    never = anyio.Event()
    sleeping = anyio.Event()

    async def blocking_sleep(seconds: float) -> None:
        sleeping.set()
        await never.wait()

    up = Upstream(httpx2.Response(503), ok())
    ft = FakeTime()
    up.clock = ft.clock
    client = BraveClient(
        Settings(api_key=SecretStr(KEY), base_url="https://brave.test", retries=3, rate_limit=1000.0, burst=1000),
        transport=httpx2.MockTransport(up.handle),
        clock=ft.clock,
        sleep=blocking_sleep,
    )
    async with client:
        with anyio.fail_after(5):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.get, Endpoint.WEB, [("q", "x")])
                    await sleeping.wait()
                    scope.cancel()
    assert scope.cancelled_caught
    assert up.count == 1
    # The caller went away: that is not an error of the call.
    assert client.counters()["web"].errors == 0


# -- the one policy's knobs other upstreams use ------------------------------------------------------


def test_policy_never_starts_a_try_once_the_deadline_has_passed() -> None:
    from brave_search_mcp.upstream.retry import RetryPolicy

    policy = RetryPolicy(retries=3)
    failure = errors.UpstreamTimeout("slow")
    assert policy.should_retry(failure, now=10.0, deadline=10.5) is True
    assert policy.should_retry(failure, now=10.5, deadline=10.5) is False
    assert policy.should_retry(failure, now=11.0, deadline=None) is True


def test_a_demanded_wait_that_ends_just_before_the_deadline_is_not_slept_into() -> None:
    """A 429 whose reset leaves no time for the request itself ends the call at once with its retry_after,
    instead of sleeping until the deadline and timing out (the stall note's follow-up to issue 22)."""
    from brave_search_mcp.upstream.retry import START_MARGIN_SECONDS, RetryPolicy

    policy = RetryPolicy(retries=3)
    limited = errors.RateLimited("429", status=429, retry_after=9.9)
    assert policy.should_retry(limited, now=0.0, deadline=10.0) is False  # 0.1 s left after the wait: no try fits
    assert policy.should_retry(limited, now=0.0, deadline=9.9 + START_MARGIN_SECONDS + 0.001) is True
    assert policy.should_retry(limited, now=0.0, deadline=None) is True  # no deadline: only the 60 s cap
    short = errors.RateLimited("429", status=429, retry_after=0.05)
    assert policy.should_retry(short, now=0.0, deadline=1.0) is True  # a short call keeps a tenth of its time


def test_policy_can_leave_a_bot_limiters_429_alone() -> None:
    from brave_search_mcp.upstream.retry import RetryPolicy

    limited = errors.RateLimited("limiter", status=429)
    assert RetryPolicy(retries=2).should_retry(limited, now=0.0, deadline=None) is True
    assert RetryPolicy(retries=2, retry_rate_limited=False).should_retry(limited, now=0.0, deadline=None) is False
    server = errors.UpstreamError("boom", status=503)
    assert RetryPolicy(retries=2, retry_rate_limited=False).should_retry(server, now=0.0, deadline=None) is True


def test_policy_can_retry_only_what_the_upstream_refused_before_doing_anything() -> None:
    """A streamed POST (Brave's answers) is sent again only after a 429, never after a 5xx or a dropped line."""
    from brave_search_mcp.upstream.retry import RetryPolicy

    policy = RetryPolicy(retries=2, rate_limited_only=True)
    assert policy.should_retry(errors.RateLimited("slow down", status=429), now=0.0, deadline=None) is True
    assert policy.should_retry(errors.UpstreamError("boom", status=503), now=0.0, deadline=None) is False
    assert policy.should_retry(errors.NetworkError("reset", retryable=True), now=0.0, deadline=None) is False


@pytest.mark.parametrize(
    ("body", "says"),
    [(b"", "answered with an empty body"), (b"<html>", "was not valid JSON"), (b"[1]", "JSON but not an object")],
)
def test_decoding_names_the_upstream_and_its_hint(body: bytes, says: str) -> None:
    from brave_search_mcp.upstream.bodies import decode_json_object

    with pytest.raises(errors.ParseError) as brave:
        decode_json_object(body)
    with pytest.raises(errors.ParseError) as other:
        decode_json_object(body, "SearXNG", "Check the base URL.")
    assert brave.value.message.startswith("Brave") and says in brave.value.message
    assert other.value.message.startswith("SearXNG") and other.value.message.endswith("Check the base URL.")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b'{"title": "caf\\u00e9", "n": 12345678901234567890123, "x": 0.1}',
            {"title": "café", "n": 12345678901234567890123, "x": 0.1},
        ),
        (b'{"a": 1, "a": 2}', {"a": 2}),  # a repeated name: the last value, as json reads it
        (b'\xef\xbb\xbf{"bom": true}', {"bom": True}),  # pydantic-core refuses a BOM; json reads it
        ('{"u": "é"}'.encode("utf-16"), {"u": "é"}),  # and UTF-16
        (b'{"s": "bad \\ud800 escape"}', {"s": "bad \ud800 escape"}),  # and a lone surrogate escape
    ],
)
def test_a_body_decodes_as_json_reads_it_whichever_parser_takes_it(body: bytes, expected: dict[str, object]) -> None:
    from brave_search_mcp.upstream.bodies import decode_json_object

    assert decode_json_object(body) == expected
    assert decode_json_object(body) == json.loads(body)
