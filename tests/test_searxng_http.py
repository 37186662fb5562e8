"""The SearXNG provider's HTTP: what each status means, retries, redirects never followed, politeness towards
the instance and its bot limiter, the status probe, and real sockets."""

from __future__ import annotations

import json
import time

import httpx2
import pytest

from brave_search_mcp.models.errors import (
    AuthFailed,
    NetworkError,
    NoResults,
    ParseError,
    ProviderMisconfigured,
    ResponseTooLarge,
    UpstreamError,
    UpstreamTimeout,
    UpstreamValidation,
)
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.providers.searxng.results import EnginesUnavailable
from brave_search_mcp.render.text import seconds_text
from brave_search_mcp.upstream.transport_errors import timeout_error
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.searxng.provider import BASE, make_provider
from testkit.searxng.provider import search_request as req

# ------------------------------------------------------------------------------------ failures


@pytest.mark.anyio
async def test_json_disabled_is_reported_as_misconfiguration_naming_the_setting(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.json_enabled = False
    with pytest.raises(ProviderMisconfigured) as caught:
        await searxng.search(req())
    error = caught.value
    assert error.code == "PROVIDER_MISCONFIGURED"
    assert "search.formats" in error.message and "json" in error.message and "settings.yml" in error.message
    assert error.details["setting"] == "search.formats"
    assert error.retryable is False
    assert len(searx.search_requests()) == 1  # not retried


@pytest.mark.anyio
async def test_empty_results_are_no_results_with_suggestions(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.pages = 0
    searx.suggestions = ["helo world"]
    with pytest.raises(NoResults) as caught:
        await searxng.search(req())
    assert caught.value.code == "NO_RESULTS"
    assert caught.value.details["suggestions"] == ["helo world"]


@pytest.mark.anyio
async def test_unresponsive_engines_become_one_warning(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.unresponsive = [("bing", "timeout"), ("yacy", "HTTP error")]
    page = await searxng.search(req())
    assert [w.code for w in page.warnings] == ["ENGINES_UNRESPONSIVE"]
    assert "bing (timeout)" in page.warnings[0].message and "yacy (HTTP error)" in page.warnings[0].message
    assert len(page.sections[0].results) == 10


@pytest.mark.anyio
async def test_all_engines_failing_is_a_provider_failure_not_no_results(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.all_engines_fail = True
    with pytest.raises(EnginesUnavailable) as caught:
        await searxng.search(req())
    error = caught.value
    assert isinstance(error, UpstreamError) and not isinstance(error, NoResults)
    assert error.code == "UPSTREAM_ERROR" and error.retryable is True
    assert error.details["unresponsive_engines"] == ["bing (timeout)", "duckduckgo (timeout)", "yacy (timeout)"]
    assert len(searx.search_requests()) == 1  # SearXNG already waited on its engines: no retry
    assert error.details["attempts"] == 1  # it answered the one request sent, like every other failure says


@pytest.mark.anyio
async def test_5xx_is_retried_with_backoff_then_succeeds(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.fail_next(503, 2)
    page = await searxng.search(req())
    assert page.attempts == 3
    assert len(searx.search_requests()) == 3
    backoffs = clock.sleeps[:2]  # a third sleep, if any, is the limiter keeping 2 starts per second
    assert all(0 < s <= 2.5 for s in backoffs)
    assert clock() - 1000.0 >= 1.0  # three starts cannot fit in one second


@pytest.mark.anyio
async def test_5xx_after_all_retries_is_an_upstream_error(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(502, 5)
    with pytest.raises(UpstreamError) as caught:
        await searxng.search(req())
    assert caught.value.details["status"] == 502 and caught.value.details["attempts"] == 3
    assert caught.value.retryable is True
    assert len(searx.search_requests()) == 3  # 1 + retries=2


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, UpstreamValidation),
        (401, AuthFailed),
        (403, ProviderMisconfigured),
        (404, ProviderMisconfigured),
        (418, UpstreamError),
    ],
)
@pytest.mark.anyio
async def test_4xx_is_never_retried(
    searxng: SearxngProvider, searx: FakeSearxng, status: int, error_type: type[Exception]
) -> None:
    searx.fail_next(status, 3)
    with pytest.raises(error_type):
        await searxng.search(req())
    assert len(searx.search_requests()) == 1


@pytest.mark.anyio
async def test_404_names_the_base_url_setting(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(404)
    with pytest.raises(ProviderMisconfigured) as caught:
        await searxng.search(req())
    assert caught.value.details["setting"] == "base_url"
    assert f"{BASE}/search" in caught.value.message


@pytest.mark.anyio
async def test_bad_parameter_reaching_searxng_is_upstream_validation_with_its_message(searxng: SearxngProvider) -> None:
    with pytest.raises(UpstreamValidation) as caught:
        await searxng.search(req(query="   "))  # validated upstream of us normally; SearXNG says "No query"
    assert "No query" in caught.value.message


@pytest.mark.anyio
async def test_non_json_answer_is_a_parse_error(clock: FakeClock) -> None:
    transport = httpx2.MockTransport(lambda r: httpx2.Response(200, text="<html>login</html>"))
    provider = make_provider(transport, clock)
    with pytest.raises(ParseError):
        await provider.search(req())
    await provider.aclose()


@pytest.mark.anyio
async def test_connection_failures_are_retried_then_network_error_without_secrets(clock: FakeClock) -> None:
    calls: list[int] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        raise httpx2.ConnectError("refused by pw-not-real-9", request=request)

    provider = make_provider(httpx2.MockTransport(refuse), clock, username="u", password="pw-not-real-9")
    with pytest.raises(NetworkError) as caught:
        await provider.search(req())
    await provider.aclose()
    assert len(calls) == 3 and caught.value.retryable is True
    assert caught.value.message.startswith("Could not reach SearXNG (ConnectError")
    assert "pw-not-real-9" not in caught.value.message
    assert caught.value.details["provider"] == "searxng"


@pytest.mark.anyio
async def test_501_is_an_upstream_error_that_is_not_retried(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(501, 3)
    with pytest.raises(UpstreamError) as caught:
        await searxng.search(req())
    assert caught.value.retryable is False and len(searx.search_requests()) == 1


@pytest.mark.anyio
async def test_oversized_answer_is_refused(searx: FakeSearxng, clock: FakeClock) -> None:
    provider = make_provider(searx, clock, max_response_bytes=500)
    with pytest.raises(ResponseTooLarge):
        await provider.search(req())
    await provider.aclose()


@pytest.mark.anyio
async def test_a_json_body_labelled_html_is_not_taken_for_the_api(clock: FakeClock) -> None:
    page = httpx2.Response(200, text='{"results": []}', headers={"Content-Type": "text/html"})
    transport = httpx2.MockTransport(lambda r: page)
    provider = make_provider(transport, clock)
    with pytest.raises(ParseError) as caught:
        await provider.search(req())
    await provider.aclose()
    assert "text/html, not JSON" in caught.value.message and "base URL" in caught.value.message


def test_base_url_without_scheme_is_a_misconfiguration() -> None:
    with pytest.raises(ProviderMisconfigured) as caught:
        SearxngConfig(base_url="localhost:8080")
    assert caught.value.details["setting"] == "base_url"


def test_password_is_not_in_the_config_repr() -> None:
    config = SearxngConfig(base_url=BASE, username="alice", password="pw-not-real-123")
    assert "pw-not-real-123" not in repr(config)


@pytest.mark.anyio
async def test_basic_auth_is_sent_when_configured(clock: FakeClock) -> None:
    searx = FakeSearxng(auth=("alice", "pw-not-real"))
    good = make_provider(searx, clock, username="alice", password="pw-not-real")
    page = await good.search(req())
    assert page.sections[0].results
    bad = make_provider(searx, clock)
    with pytest.raises(AuthFailed) as caught:
        await bad.search(req())
    assert "username and password" in caught.value.message
    assert "pw-not-real" not in caught.value.message
    await good.aclose()
    await bad.aclose()


@pytest.mark.anyio
async def test_past_deadline_fails_without_sending(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    with pytest.raises(UpstreamTimeout):
        await searxng.search(req(), deadline=clock() - 1)
    assert searx.requests == []


# ------------------------------------------------------------------------------------ real sockets


@pytest.mark.anyio
async def test_real_server_round_trip(searxng_server: FakeSearxngServer) -> None:
    provider = SearxngProvider(SearxngConfig(base_url=searxng_server.base_url + "/"))
    page = await provider.search(req(search_type="news", count=2, query="!!g news"))
    await provider.aclose()
    assert [r.rank for r in page.sections[0].results] == [1, 2]
    sent = searxng_server.fake.search_requests()[0]
    assert (sent.path, sent.method, sent.engine_query) == ("/search", "POST", '"!!g" news')


def test_a_timeout_reads_in_whole_seconds_not_float_noise() -> None:
    error = timeout_error("SearXNG", 7.999994)  # what was left of an 8 s budget a moment after it started
    assert error.message == "SearXNG did not answer within 8 s."
    assert error.details["timeout_seconds"] == 8.0
    assert [seconds_text(s) for s in (0.25, 0.3, 1.0, 2.54, 52.4, 59.96, 180, 5400)] == [
        "0.25 s", "0.3 s", "1 s", "2.5 s", "52 s", "60 s", "3 min", "1.5 h"
    ]  # fmt: skip


@pytest.mark.anyio
async def test_slow_instance_times_out_at_the_configured_timeout(searxng_server: FakeSearxngServer) -> None:
    searxng_server.fake.delay_seconds = 5.0
    provider = SearxngProvider(SearxngConfig(base_url=searxng_server.base_url, timeout=0.2, retries=0))
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout) as caught:
        await provider.search(req())
    elapsed = time.monotonic() - started
    await provider.aclose()
    assert caught.value.code == "TIMEOUT" and caught.value.retryable is True
    assert elapsed < 2.0


@pytest.mark.anyio
async def test_fake_answers_searxng_shaped_json_over_http(searxng_server: FakeSearxngServer) -> None:
    search = searxng_server.base_url + "/search"
    async with httpx2.AsyncClient() as http:
        ok = await http.get(search, params={"q": "x", "format": "json", "categories": "bogus"})
        no_query = await http.get(search, params={"format": "json"})
        bad_safe = await http.get(search, params={"q": "x", "format": "json", "safesearch": "5"})
        bad_page = await http.get(search, params={"q": "x", "format": "json", "pageno": "0"})
    body = ok.json()
    assert set(body) == {
        "query", "results", "answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines"
    }  # fmt: skip
    assert body["results"][0]["category"] == "general"  # unknown categories are ignored
    assert (no_query.status_code, no_query.json()) == (400, {"error": "No query"})
    assert bad_safe.status_code == 400 and "safesearch" in json.loads(bad_safe.text)["error"]
    assert bad_page.status_code == 400
