"""The SearXNG provider against a fake that speaks SearXNG's JSON API: mapping, parameters, errors, politeness."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import pytest

from brave_search_mcp._version import __version__
from brave_search_mcp.models.errors import (
    AuthFailed,
    InvalidArgument,
    NetworkError,
    NoResults,
    ParseError,
    ProviderMisconfigured,
    RateLimited,
    ResponseTooLarge,
    UpstreamError,
    UpstreamTimeout,
    UpstreamValidation,
)
from brave_search_mcp.providers.protocol import SearchRequest
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider, build_params
from brave_search_mcp.providers.searxng.results import EnginesUnavailable
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng, FakeSearxngServer

BASE = "http://searxng.test:8080"


def req(**overrides: Any) -> SearchRequest:
    values: dict[str, Any] = {"query": "hello world", "search_type": "web", "count": 10, "offset": 0}
    values.update(overrides)
    return SearchRequest(**values)


@pytest.fixture
def searx() -> FakeSearxng:
    return FakeSearxng()


def make(searx: FakeSearxng, clock: FakeClock, **config: Any) -> SearxngProvider:
    cfg = SearxngConfig(base_url=config.pop("base_url", BASE), **config)
    return SearxngProvider(cfg, transport=searx.mock_transport(), clock=clock, sleep=clock.sleep)


@pytest.fixture
async def provider(searx: FakeSearxng, clock: FakeClock) -> AsyncIterator[SearxngProvider]:
    p = make(searx, clock)
    yield p
    await p.aclose()


# ------------------------------------------------------------------------------------ mapping


@pytest.mark.anyio
async def test_web_results_are_mapped_with_provenance_and_clean_text(provider: SearxngProvider) -> None:
    page = await provider.search(req())
    assert page.provider == "searxng"
    assert page.attempts == 1
    assert [s.key for s in page.sections] == ["web"]
    results = page.sections[0].results
    assert len(results) == 10
    first = results[0]
    assert first.title == "hello world – result 1"
    assert first.snippet == "About hello world & more (result 1)."  # <b> stripped, &amp; decoded
    assert first.url == "https://site0.example.org/hello-world/1"
    assert first.site == "site0.example.org"
    assert first.provider == "searxng"
    assert first.engines == ["duckduckgo", "bing"]
    assert first.score == 2.0
    assert [r.rank for r in results] == list(range(1, 11))
    assert page.more_available is True
    assert page.warnings == []


@pytest.mark.anyio
async def test_count_cuts_the_page_and_ranks_continue_across_pages(
    provider: SearxngProvider, searx: FakeSearxng
) -> None:
    page = await provider.search(req(count=4, offset=2))
    section = page.sections[0]
    assert [r.rank for r in section.results] == [9, 10, 11, 12]
    assert section.section_limit_reached is True
    assert searx.search_requests()[-1].params["pageno"] == "3"


@pytest.mark.anyio
async def test_request_parameters_sent(provider: SearxngProvider, searx: FakeSearxng) -> None:
    await provider.search(
        req(search_type="news", offset=1, language="en", country="DE", safe_search="strict", freshness="pw")
    )
    assert searx.search_requests()[-1].params == {
        "q": "hello world",
        "format": "json",
        "categories": "news",
        "pageno": "2",
        "language": "en-DE",
        "safesearch": "2",
        "time_range": "week",
    }


@pytest.mark.parametrize(("freshness", "time_range"), [("pd", "day"), ("pw", "week"), ("pm", "month"), ("py", "year")])
@pytest.mark.parametrize(("safe", "level"), [("off", "0"), ("moderate", "1"), ("strict", "2")])
def test_freshness_and_safe_search_mapping(freshness: str, time_range: str, safe: str, level: str) -> None:
    params, warnings = build_params(req(freshness=freshness, safe_search=safe))
    assert (params["time_range"], params["safesearch"], warnings) == (time_range, level, [])


@pytest.mark.anyio
async def test_custom_date_range_is_dropped_with_a_warning(provider: SearxngProvider, searx: FakeSearxng) -> None:
    page = await provider.search(req(freshness="2025-01-01to2025-02-01"))
    assert "time_range" not in searx.search_requests()[-1].params
    assert [w.code for w in page.warnings] == ["PARAM_IGNORED"]
    assert "custom date ranges" in page.warnings[0].message


@pytest.mark.anyio
async def test_country_without_language_is_not_sent_and_says_so(provider: SearxngProvider, searx: FakeSearxng) -> None:
    page = await provider.search(req(country="FR"))
    assert "language" not in searx.search_requests()[-1].params
    assert [w.code for w in page.warnings] == ["PARAM_IGNORED"]


@pytest.mark.anyio
async def test_news_carry_iso_published_dates(provider: SearxngProvider) -> None:
    page = await provider.search(req(search_type="news", count=3))
    assert [s.key for s in page.sections] == ["news"]
    dates = [r.published_date for r in page.sections[0].results]
    assert dates == ["2025-03-14T09:30:00+00:00", "2025-03-14T08:30:00+00:00", "2025-03-14T07:30:00+00:00"]


@pytest.mark.anyio
async def test_images_carry_image_url_thumbnail_and_size(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.extra_results = [{"url": "https://no-image.example.org/", "title": "no image", "img_src": ""}]
    page = await provider.search(req(search_type="images", count=2))
    first = page.sections[0].results[0]
    assert page.sections[0].key == "images"
    assert searx.search_requests()[-1].params["categories"] == "images"
    assert first.image_url == "https://img.example.net/hello-world/1.jpg"
    assert first.thumbnail == "https://img.example.net/hello-world/1.thumb.jpg"
    assert (first.width, first.height) == (800, 600)


@pytest.mark.anyio
async def test_unusable_urls_are_dropped_duplicates_removed_odd_fields_tolerated(
    provider: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.extra_results = [
        {"url": "javascript:alert(1)", "title": "evil"},
        {"url": "https://dup.example.org/page", "title": "<script>x</script>Dup", "score": "high"},
        {"url": "https://dup.example.org/page/", "title": "dup again"},
        {"url": "https://odd.example.org/", "engine": "wikipedia", "publishedDate": "yesterday", "score": 1e999},
        "not an object",
    ]
    page = await provider.search(req(count=3))
    results = page.sections[0].results
    assert [r.url for r in results] == [
        "https://dup.example.org/page",
        "https://odd.example.org/",
        "https://site0.example.org/hello-world/1",
    ]
    assert results[0].title == "xDup" and results[0].score is None
    assert results[1].title == "odd.example.org"  # no title: the site stands in
    assert (results[1].engines, results[1].published_date, results[1].score) == (["wikipedia"], None, None)
    assert [w.code for w in page.warnings] == ["DEDUPLICATED"]


@pytest.mark.anyio
async def test_answers_infoboxes_and_suggestions_become_sections(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.answers = [{"answer": "Hello <b>world</b>", "url": None, "engine": "plugin: hash_plugin"}]
    searx.infoboxes = [
        {
            "infobox": "Hello",
            "id": "https://en.wikipedia.org/wiki/Hello",
            "content": "A greeting.",
            "engine": "wikipedia",
            "attributes": [{"label": "Language", "value": "English"}, {"label": "", "value": "dropped"}],
            "urls": [{"title": "Wikipedia", "url": "https://en.wikipedia.org/wiki/Hello"}],
        }
    ]
    searx.suggestions = ["hello there", "hello world program"]
    searx.corrections = ["hello world"]
    page = await provider.search(req())
    assert [s.key for s in page.sections] == ["web", "infobox", "answers", "suggestions"]
    infobox = page.sections[1].results[0]
    assert (infobox.title, infobox.url, infobox.attributes) == (
        "Hello",
        "https://en.wikipedia.org/wiki/Hello",
        [["Language", "English"]],
    )
    answer = page.sections[2].results[0]
    assert (answer.snippet, answer.engines) == ("Hello world", ["plugin: hash_plugin"])
    assert [r.title for r in page.sections[3].results] == ["hello world", "hello there", "hello world program"]


@pytest.mark.anyio
async def test_older_build_with_string_answers_and_number_of_results(
    provider: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.legacy = True
    searx.pages = 0
    searx.answers = [{"answer": "42"}]
    page = await provider.search(req())
    assert [s.key for s in page.sections] == ["answers"]  # an answer alone is a result, not NO_RESULTS
    assert page.sections[0].results[0].snippet == "42"


# ------------------------------------------------------------------------------------ failures


@pytest.mark.anyio
async def test_json_disabled_is_reported_as_misconfiguration_naming_the_setting(
    provider: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.json_enabled = False
    with pytest.raises(ProviderMisconfigured) as caught:
        await provider.search(req())
    error = caught.value
    assert error.code == "PROVIDER_MISCONFIGURED"
    assert "search.formats" in error.message and "json" in error.message and "settings.yml" in error.message
    assert error.details["setting"] == "search.formats"
    assert error.retryable is False
    assert len(searx.search_requests()) == 1  # not retried


@pytest.mark.anyio
async def test_empty_results_are_no_results_with_suggestions(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.pages = 0
    searx.suggestions = ["helo world"]
    with pytest.raises(NoResults) as caught:
        await provider.search(req())
    assert caught.value.code == "NO_RESULTS"
    assert caught.value.details["suggestions"] == ["helo world"]


@pytest.mark.anyio
async def test_unresponsive_engines_become_one_warning(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.unresponsive = [("bing", "timeout"), ("yacy", "HTTP error")]
    page = await provider.search(req())
    assert [w.code for w in page.warnings] == ["ENGINES_UNRESPONSIVE"]
    assert "bing (timeout)" in page.warnings[0].message and "yacy (HTTP error)" in page.warnings[0].message
    assert len(page.sections[0].results) == 10


@pytest.mark.anyio
async def test_all_engines_failing_is_a_provider_failure_not_no_results(
    provider: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.all_engines_fail = True
    with pytest.raises(EnginesUnavailable) as caught:
        await provider.search(req())
    error = caught.value
    assert isinstance(error, UpstreamError) and not isinstance(error, NoResults)
    assert error.code == "UPSTREAM_ERROR" and error.retryable is True
    assert error.details["unresponsive_engines"] == ["duckduckgo (timeout)", "bing (timeout)", "yacy (timeout)"]
    assert len(searx.search_requests()) == 1  # SearXNG already waited on its engines: no retry


@pytest.mark.anyio
async def test_5xx_is_retried_with_backoff_then_succeeds(
    provider: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.fail_next(503, 2)
    page = await provider.search(req())
    assert page.attempts == 3
    assert len(searx.search_requests()) == 3
    backoffs = clock.sleeps[:2]  # a third sleep, if any, is the limiter keeping 2 starts per second
    assert all(0 < s <= 2.5 for s in backoffs)
    assert clock() - 1000.0 >= 1.0  # three starts cannot fit in one second


@pytest.mark.anyio
async def test_5xx_after_all_retries_is_an_upstream_error(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(502, 5)
    with pytest.raises(UpstreamError) as caught:
        await provider.search(req())
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
        (429, RateLimited),
        (418, UpstreamError),
    ],
)
@pytest.mark.anyio
async def test_4xx_is_never_retried(
    provider: SearxngProvider, searx: FakeSearxng, status: int, error_type: type[Exception]
) -> None:
    searx.fail_next(status, 3)
    with pytest.raises(error_type):
        await provider.search(req())
    assert len(searx.search_requests()) == 1


@pytest.mark.anyio
async def test_404_names_the_base_url_setting(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(404)
    with pytest.raises(ProviderMisconfigured) as caught:
        await provider.search(req())
    assert caught.value.details["setting"] == "base_url"
    assert f"{BASE}/search" in caught.value.message


@pytest.mark.anyio
async def test_bad_parameter_reaching_searxng_is_upstream_validation_with_its_message(clock: FakeClock) -> None:
    searx = FakeSearxng()
    provider = make(searx, clock)
    with pytest.raises(UpstreamValidation) as caught:
        await provider.search(req(query="   "))  # validated upstream of us normally; SearXNG says "No query"
    assert "No query" in caught.value.message
    await provider.aclose()


@pytest.mark.anyio
async def test_non_json_answer_is_a_parse_error(clock: FakeClock) -> None:
    transport = httpx2.MockTransport(lambda r: httpx2.Response(200, text="<html>login</html>"))
    provider = SearxngProvider(SearxngConfig(base_url=BASE), transport=transport, clock=clock, sleep=clock.sleep)
    with pytest.raises(ParseError):
        await provider.search(req())
    await provider.aclose()


@pytest.mark.anyio
async def test_connection_failures_are_retried_then_network_error_without_secrets(clock: FakeClock) -> None:
    calls: list[int] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        raise httpx2.ConnectError("refused by pw-not-real-9", request=request)

    config = SearxngConfig(base_url=BASE, username="u", password="pw-not-real-9")
    provider = SearxngProvider(config, transport=httpx2.MockTransport(refuse), clock=clock, sleep=clock.sleep)
    with pytest.raises(NetworkError) as caught:
        await provider.search(req())
    await provider.aclose()
    assert len(calls) == 3 and caught.value.retryable is True
    assert caught.value.message.startswith("Could not reach SearXNG (ConnectError")
    assert "pw-not-real-9" not in caught.value.message
    assert caught.value.details["provider"] == "searxng"


@pytest.mark.anyio
async def test_501_is_an_upstream_error_that_is_not_retried(provider: SearxngProvider, searx: FakeSearxng) -> None:
    searx.fail_next(501, 3)
    with pytest.raises(UpstreamError) as caught:
        await provider.search(req())
    assert caught.value.retryable is False and len(searx.search_requests()) == 1


@pytest.mark.anyio
async def test_oversized_answer_is_refused(searx: FakeSearxng, clock: FakeClock) -> None:
    provider = make(searx, clock, max_response_bytes=500)
    with pytest.raises(ResponseTooLarge):
        await provider.search(req())
    await provider.aclose()


@pytest.mark.anyio
async def test_videos_are_not_served(provider: SearxngProvider, searx: FakeSearxng) -> None:
    assert provider.supports("videos") is False
    assert all(provider.supports(t) for t in ("web", "news", "images"))
    with pytest.raises(InvalidArgument):
        await provider.search(req(search_type="videos"))
    assert searx.requests == []


def test_base_url_without_scheme_is_a_misconfiguration() -> None:
    with pytest.raises(ProviderMisconfigured) as caught:
        SearxngConfig(base_url="localhost:8080")
    assert caught.value.details["setting"] == "base_url"


def test_password_is_not_in_the_config_repr() -> None:
    config = SearxngConfig(base_url=BASE, username="alice", password="pw-not-real-123")
    assert "pw-not-real-123" not in repr(config)


# ------------------------------------------------------------------------------------ politeness


def _timed_transport(searx: FakeSearxng, clock: FakeClock, starts: list[float]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        starts.append(clock())
        reply = searx.handle("GET", request.url.path, list(request.url.params.multi_items()), dict(request.headers))
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.body)

    return httpx2.MockTransport(handler)


def _max_in_any_window(starts: list[float], window: float = 1.0) -> int:
    return max(sum(1 for t in starts if s <= t < s + window) for s in starts)


@pytest.mark.anyio
async def test_at_most_two_requests_start_in_any_one_second(searx: FakeSearxng, clock: FakeClock) -> None:
    starts: list[float] = []
    provider = SearxngProvider(
        SearxngConfig(base_url=BASE), transport=_timed_transport(searx, clock, starts), clock=clock, sleep=clock.sleep
    )
    for _ in range(5):
        await provider.search(req())
    assert starts == [1000.0, 1000.0, 1001.0, 1001.0, 1002.0]
    assert _max_in_any_window(starts) == 2
    await provider.aclose()


@pytest.mark.anyio
async def test_limiter_holds_for_concurrent_callers_too(searx: FakeSearxng, clock: FakeClock) -> None:
    starts: list[float] = []
    provider = SearxngProvider(
        SearxngConfig(base_url=BASE), transport=_timed_transport(searx, clock, starts), clock=clock, sleep=clock.sleep
    )
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(provider.search, req())
    assert len(starts) == 6
    assert _max_in_any_window(starts) <= 2
    await provider.aclose()


@pytest.mark.anyio
async def test_limiter_fails_fast_when_the_wait_outlasts_the_deadline(
    provider: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    await provider.search(req())
    await provider.search(req())
    with pytest.raises(RateLimited) as caught:
        await provider.search(req(), deadline=clock() + 0.5)
    assert caught.value.details["client_side"] is True
    assert caught.value.details["retry_after_seconds"] == 1.0
    assert len(searx.search_requests()) == 2  # nothing was sent
    assert clock.sleeps == []  # and nothing waited


@pytest.mark.anyio
async def test_user_agent_accept_and_extra_headers_are_sent(searx: FakeSearxng, clock: FakeClock) -> None:
    provider = make(searx, clock, headers={"X-Instance-Token": "tok-not-real"})
    await provider.search(req())
    headers = searx.search_requests()[0].headers
    assert headers["user-agent"].startswith(f"brave-search-mcp/{__version__}")
    assert headers["accept"] == "application/json"
    assert headers["x-instance-token"] == "tok-not-real"
    await provider.aclose()


@pytest.mark.anyio
async def test_basic_auth_is_sent_when_configured(clock: FakeClock) -> None:
    searx = FakeSearxng(auth=("alice", "pw-not-real"))
    good = make(searx, clock, username="alice", password="pw-not-real")
    page = await good.search(req())
    assert page.sections[0].results
    bad = make(searx, clock)
    with pytest.raises(AuthFailed) as caught:
        await bad.search(req())
    assert "username and password" in caught.value.message
    assert "pw-not-real" not in caught.value.message
    await good.aclose()
    await bad.aclose()


@pytest.mark.anyio
async def test_past_deadline_fails_without_sending(
    provider: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    with pytest.raises(UpstreamTimeout):
        await provider.search(req(), deadline=clock() - 1)
    assert searx.requests == []


# ------------------------------------------------------------------------------------ real sockets


@pytest.fixture
def server() -> Iterator[FakeSearxngServer]:
    with FakeSearxngServer(FakeSearxng()) as running:
        yield running


@pytest.mark.anyio
async def test_real_server_round_trip(server: FakeSearxngServer) -> None:
    provider = SearxngProvider(SearxngConfig(base_url=server.base_url + "/"))
    page = await provider.search(req(search_type="news", count=2))
    await provider.aclose()
    assert [r.rank for r in page.sections[0].results] == [1, 2]
    assert server.fake.search_requests()[0].path == "/search"


@pytest.mark.anyio
async def test_slow_instance_times_out_at_the_configured_timeout(server: FakeSearxngServer) -> None:
    server.fake.delay_seconds = 5.0
    provider = SearxngProvider(SearxngConfig(base_url=server.base_url, timeout=0.2, retries=0))
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout) as caught:
        await provider.search(req())
    elapsed = time.monotonic() - started
    await provider.aclose()
    assert caught.value.code == "TIMEOUT" and caught.value.retryable is True
    assert elapsed < 2.0


@pytest.mark.anyio
async def test_fake_answers_searxng_shaped_json_over_http(server: FakeSearxngServer) -> None:
    async with httpx2.AsyncClient() as http:
        ok = await http.get(server.base_url + "/search", params={"q": "x", "format": "json", "categories": "bogus"})
        no_query = await http.get(server.base_url + "/search", params={"format": "json"})
        bad_safe = await http.get(server.base_url + "/search", params={"q": "x", "format": "json", "safesearch": "5"})
        bad_page = await http.get(server.base_url + "/search", params={"q": "x", "format": "json", "pageno": "0"})
    body = ok.json()
    assert set(body) == {
        "query", "results", "answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines"
    }  # fmt: skip
    assert body["results"][0]["category"] == "general"  # unknown categories are ignored
    assert (no_query.status_code, no_query.json()) == (400, {"error": "No query"})
    assert bad_safe.status_code == 400 and "safesearch" in json.loads(bad_safe.text)["error"]
    assert bad_page.status_code == 400
