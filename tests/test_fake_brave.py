"""The fake Brave upstream must speak Brave's protocol faithfully, or every test built on it proves nothing."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from testkit.brave.brave import (
    FAULTS,
    IMAGES_PATH,
    NEWS_PATH,
    SUMMARIZER_PATH,
    VALID_KEY,
    VIDEOS_PATH,
    WEB_PATH,
    FakeBrave,
    Reply,
)
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.foreground import foreground_server, interrupt

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


@pytest.fixture
def fake() -> FakeBrave:
    """A fresh fake with default limits."""
    return FakeBrave()


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(rate_per_second=1000) as srv:
        yield srv


@pytest.fixture(scope="module")
def shared_http(shared_server: FakeBraveServer) -> Iterator[httpx2.Client]:
    headers = {"X-Subscription-Token": VALID_KEY}
    with httpx2.Client(base_url=shared_server.base_url, headers=headers, timeout=5.0) as client:
        yield client


@pytest.fixture
def server(shared_server: FakeBraveServer) -> FakeBraveServer:
    """The module's real server, with a fake that forgot earlier tests."""
    shared_server.fake.reset()
    return shared_server


@pytest.fixture
def http(server: FakeBraveServer, shared_http: httpx2.Client) -> httpx2.Client:
    """The module's keep-alive client for the real server."""
    return shared_http


# ---------------------------------------------------------------------------------------------- token


def test_missing_token_is_a_validation_error_on_the_header(fake: FakeBrave) -> None:
    reply = ask(fake, token=None)
    assert reply.status == 422
    error = error_of(reply)
    assert error["code"] == "VALIDATION"
    assert error["meta"]["errors"] == [
        {"type": "missing", "loc": ["header", "x-subscription-token"], "msg": "Field required", "input": None}
    ]


def test_unknown_token_is_rejected_before_parameters_are_checked(fake: FakeBrave) -> None:
    reply = ask(fake, params=[("q", ""), ("count", "0")], token="not-a-key")
    assert reply.status == 422
    error = error_of(reply)
    assert error["code"] == "SUBSCRIPTION_TOKEN_INVALID"
    assert error["detail"] == "The provided subscription token is invalid."
    assert error["meta"] == {"component": "authentication"}


def test_each_configured_key_is_accepted() -> None:
    fake = FakeBrave(api_keys=("key-one-fake", "key-two-fake"))
    assert ask(fake, token="key-one-fake").status == 200
    assert ask(fake, token="key-two-fake").status == 200
    assert ask(fake, token=VALID_KEY).status == 422


def test_recorded_requests_never_keep_the_token_value(fake: FakeBrave) -> None:
    with mock_client(fake) as client:
        client.get(WEB_PATH, params={"q": "python asyncio", "count": "3"})
    ask(fake, token=None)
    first, second = fake.requests
    assert (first.method, first.path, first.params) == ("GET", WEB_PATH, [("q", "python asyncio"), ("count", "3")])
    assert first.has_token and not second.has_token
    assert first.status == 200 and second.status == 422
    assert "x-subscription-token" not in first.headers
    assert VALID_KEY not in repr(fake.requests)
    assert all(key == key.lower() for key in first.headers)


# ---------------------------------------------------------------------------------------------- validation

VALIDATION_CASES: list[tuple[str, Params, str, str]] = [
    (WEB_PATH, [], "q", "missing"),
    (WEB_PATH, [("q", "")], "q", "string_too_short"),
    (WEB_PATH, [("q", "   ")], "q", "string_too_short"),
    (WEB_PATH, [("q", "a" * 401)], "q", "string_too_long"),
    (WEB_PATH, [("q", " ".join(["w"] * 51))], "q", "value_error"),
    (WEB_PATH, [("q", "x"), ("count", "0")], "count", "greater_than_equal"),
    (WEB_PATH, [("q", "x"), ("count", "21")], "count", "less_than_equal"),
    (WEB_PATH, [("q", "x"), ("count", "ten")], "count", "int_parsing"),
    (NEWS_PATH, [("q", "x"), ("count", "51")], "count", "less_than_equal"),
    (VIDEOS_PATH, [("q", "x"), ("count", "51")], "count", "less_than_equal"),
    (IMAGES_PATH, [("q", "x"), ("count", "201")], "count", "less_than_equal"),
    (WEB_PATH, [("q", "x"), ("offset", "10")], "offset", "less_than_equal"),
    (NEWS_PATH, [("q", "x"), ("offset", "-1")], "offset", "greater_than_equal"),
    (IMAGES_PATH, [("q", "x"), ("offset", "0")], "offset", "extra_forbidden"),
    (IMAGES_PATH, [("q", "x"), ("ui_lang", "en-US")], "ui_lang", "extra_forbidden"),
    (WEB_PATH, [("q", "x"), ("country", "VN")], "country", "enum"),
    (WEB_PATH, [("q", "x"), ("search_lang", "zh")], "search_lang", "enum"),
    (NEWS_PATH, [("q", "x"), ("ui_lang", "en-XX")], "ui_lang", "enum"),
    (WEB_PATH, [("q", "x"), ("safesearch", "none")], "safesearch", "enum"),
    (IMAGES_PATH, [("q", "x"), ("safesearch", "moderate")], "safesearch", "enum"),
    (WEB_PATH, [("q", "x"), ("units", "kelvin")], "units", "enum"),
    (WEB_PATH, [("q", "x"), ("freshness", "lastweek")], "freshness", "string_pattern_mismatch"),
    (VIDEOS_PATH, [("q", "x"), ("freshness", "2024-01-01to2024")], "freshness", "string_pattern_mismatch"),
    (WEB_PATH, [("q", "x"), ("result_filter", "web,bogus")], "result_filter", "value_error"),
    (WEB_PATH, [("q", "x"), ("result_filter", ",")], "result_filter", "value_error"),
    (NEWS_PATH, [("q", "x"), ("result_filter", "news")], "result_filter", "extra_forbidden"),
    (WEB_PATH, [("q", "x"), ("goggles", "http://example.com/my.goggle")], "goggles", "value_error"),
    (NEWS_PATH, [("q", "x"), ("goggles", "github.com/user/my.goggle")], "goggles", "value_error"),
    (WEB_PATH, [("q", "x"), ("extra_snippets", "yes")], "extra_snippets", "bool_parsing"),
    (WEB_PATH, [("q", "x"), ("summary", "on")], "summary", "bool_parsing"),
    (SUMMARIZER_PATH, [], "key", "missing"),
    (SUMMARIZER_PATH, [("key", "never-issued")], "key", "value_error"),
]


@pytest.mark.parametrize(("path", "params", "field", "kind"), VALIDATION_CASES)
def test_invalid_parameters_get_a_pydantic_style_422(
    fake: FakeBrave, path: str, params: Params, field: str, kind: str
) -> None:
    reply = ask(fake, path, params)
    assert reply.status == 422
    error = error_of(reply)
    assert error["code"] == "VALIDATION"
    assert error["detail"] == "Unable to validate request parameter(s)"
    [item] = error["meta"]["errors"]
    assert item["loc"] == ["query", field]
    assert item["type"] == kind
    assert item["msg"]
    sent = dict(params).get(field)
    assert item["input"] == sent


def test_range_errors_carry_brave_messages_and_context(fake: FakeBrave) -> None:
    low = error_of(ask(fake, params=[("q", "x"), ("count", "0")]))["meta"]["errors"][0]
    assert low == {
        "type": "greater_than_equal",
        "loc": ["query", "count"],
        "msg": "Input should be greater than or equal to 1",
        "input": "0",
        "ctx": {"ge": 1},
    }
    high = error_of(ask(fake, IMAGES_PATH, [("q", "x"), ("count", "500")]))["meta"]["errors"][0]
    assert high["msg"] == "Input should be less than or equal to 200"
    assert high["ctx"] == {"le": 200}
    enum = error_of(ask(fake, params=[("q", "x"), ("country", "VN")]))["meta"]["errors"][0]
    assert enum["msg"].startswith("Input should be 'AR', 'AU'")
    assert enum["msg"].endswith("'US' or 'ALL'")


def test_every_problem_is_reported_at_once(fake: FakeBrave) -> None:
    reply = ask(fake, params=[("q", "x"), ("count", "99"), ("country", "XX"), ("bogus", "1")])
    locs = [e["loc"][1] for e in error_of(reply)["meta"]["errors"]]
    assert sorted(locs) == ["bogus", "count", "country"]


def test_documented_values_are_accepted(fake: FakeBrave) -> None:
    web: Params = [
        ("q", "python asyncio"),
        ("country", "us"),
        ("search_lang", "en-gb"),
        ("ui_lang", "en-GB"),
        ("count", "20"),
        ("offset", "9"),
        ("safesearch", "strict"),
        ("freshness", "2024-01-01to2024-06-30"),
        ("text_decorations", "0"),
        ("spellcheck", "1"),
        ("result_filter", "web,news,query"),
        ("goggles", "https://raw.githubusercontent.com/brave/goggles-quickstart/main/goggles/rust_programming.goggle"),
        ("goggles", "$discard\n$site=docs.rs,boost=3"),
        ("units", "metric"),
        ("extra_snippets", "true"),
        ("summary", "false"),
        ("enable_rich_callback", "FALSE"),
        ("include_fetch_metadata", "True"),
        ("operators", "true"),
    ]
    assert ask(fake, WEB_PATH, web).status == 200
    assert ask(fake, WEB_PATH, [("q", "x"), ("country", "ALL"), ("freshness", "pw")]).status == 200
    news: Params = [("q", "x"), ("count", "50"), ("safesearch", "off"), ("extra_snippets", "1"), ("goggles", "$boost")]
    assert ask(fake, NEWS_PATH, news).status == 200
    assert ask(fake, VIDEOS_PATH, [("q", "x"), ("count", "1"), ("freshness", "py")]).status == 200
    images: Params = [("q", "x"), ("count", "200"), ("safesearch", "off"), ("country", "DE"), ("search_lang", "de")]
    assert ask(fake, IMAGES_PATH, images).status == 200


def test_unknown_paths_and_methods_get_brave_style_errors(fake: FakeBrave) -> None:
    missing = ask(fake, "/res/v1/nope/search")
    assert missing.status == 404
    assert error_of(missing)["code"] == "NOT_FOUND"
    post = fake.handle("POST", WEB_PATH, [("q", "x")], {"X-Subscription-Token": VALID_KEY})
    assert post.status == 405
    assert all(post.header(h) for h in RATE_HEADERS)


# ---------------------------------------------------------------------------------------------- limits


def test_rate_window_rejects_the_second_request_in_the_same_second() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1, monthly_limit=2000, clock=clock)
    first = ask(fake)
    assert first.status == 200
    assert first.header("X-RateLimit-Remaining") == "0, 1999"
    clock.now += 0.5
    limited = ask(fake)
    assert limited.status == 429
    error = error_of(limited)
    assert error["code"] == "RATE_LIMITED"
    assert error["meta"] == {
        "plan": "Free",
        "rate_limit": 1,
        "rate_current": 1,
        "quota_limit": 2000,
        "quota_current": 1,
        "org_rate_limit": None,
        "org_rate_current": 0,
        "component": "rate_limiter",
    }
    assert limited.header("X-RateLimit-Limit") == "1, 2000"
    assert limited.header("X-RateLimit-Policy") == "1;w=1, 2000;w=2592000"
    assert limited.header("X-RateLimit-Remaining") == "0, 1999"
    reset = limited.header("X-RateLimit-Reset") or ""
    assert reset.startswith("1, ") and int(reset.split(", ")[1]) > 0
    clock.now += 0.49  # a rejected request does not extend the window
    assert ask(fake).status == 429
    clock.now += 0.01  # exactly one second after the first request
    again = ask(fake)
    assert again.status == 200
    assert again.header("X-RateLimit-Remaining") == "0, 1998"
    assert fake.rate_limited_count == 2


def test_rate_window_slides_rather_than_resetting_each_second() -> None:
    clock = FakeClock(0.0)
    fake = FakeBrave(rate_per_second=2, clock=clock)
    statuses = []
    for t in (0.0, 0.6, 0.9, 1.0, 1.5, 1.6):
        clock.now = t
        statuses.append(ask(fake).status)
    assert statuses == [200, 200, 429, 200, 429, 200]


def test_each_key_has_its_own_rate_window() -> None:
    fake = FakeBrave(api_keys=("key-a-fake", "key-b-fake"), rate_per_second=1, clock=FakeClock())
    assert ask(fake, token="key-a-fake").status == 200
    assert ask(fake, token="key-b-fake").status == 200
    assert ask(fake, token="key-a-fake").status == 429


def test_failed_requests_use_the_rate_window_but_not_the_monthly_quota() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1, monthly_limit=10, clock=clock)
    bad = ask(fake, params=[("q", "")])
    assert bad.status == 422
    assert bad.header("X-RateLimit-Remaining") == "0, 10"
    assert ask(fake).status == 429


def test_monthly_quota_counts_only_successes() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=100, monthly_limit=2, clock=clock)
    assert ask(fake).header("X-RateLimit-Remaining") == "99, 1"
    assert ask(fake, params=[("q", "x"), ("count", "0")]).status == 422
    assert ask(fake).header("X-RateLimit-Remaining") == "97, 0"
    over = ask(fake)
    assert over.status == 429
    error = error_of(over)
    assert error["code"] == "QUOTA_LIMITED"
    assert error["detail"] == "Request quota limit exceeded for plan."
    assert error["meta"]["component"] == "rate_limiter"
    assert fake.rate_limited_count == 0


def test_zero_monthly_limit_means_unlimited() -> None:
    fake = FakeBrave(monthly_limit=0)
    replies = [ask(fake) for _ in range(5)]
    assert {r.status for r in replies} == {200}
    assert replies[-1].header("X-RateLimit-Limit") == "50, 0"


def test_every_brave_answer_carries_rate_limit_headers_and_json(fake: FakeBrave) -> None:
    answers = [ask(fake), ask(fake, params=[]), ask(fake, token=None), ask(fake, token="bad"), ask(fake, "/res/v1/x")]
    for reply in answers:
        assert reply.header("Content-Type") == "application/json"
        for name in RATE_HEADERS:
            assert reply.header(name), (reply.status, name)


# ---------------------------------------------------------------------------------------------- gzip


def test_gzip_is_used_only_when_the_client_accepts_it(fake: FakeBrave) -> None:
    zipped = ask(fake, headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped.header("Content-Encoding") == "gzip"
    assert json.loads(gzip.decompress(zipped.body))["type"] == "search"
    plain = ask(fake)
    assert plain.header("Content-Encoding") is None
    assert json.loads(plain.body)["type"] == "search"
    refused = ask(fake, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert refused.header("Content-Encoding") is None
    error = ask(fake, params=[], headers={"Accept-Encoding": "gzip"})
    assert error.header("Content-Encoding") == "gzip"
    assert error_of(error)["code"] == "VALIDATION"


def test_httpx_clients_really_receive_gzip(fake: FakeBrave, http: httpx2.Client) -> None:
    with mock_client(fake) as client:
        mocked = client.get(WEB_PATH, params={"q": "python asyncio"})
    real = http.get(WEB_PATH, params={"q": "python asyncio"})
    for response in (mocked, real):
        assert response.headers["content-encoding"] == "gzip"
        assert int(response.headers["content-length"]) < len(response.content)
        assert response.json()["query"]["original"] == "python asyncio"


# ---------------------------------------------------------------------------------------------- web content


def web(fake: FakeBrave, *extra: tuple[str, str], q: str = "python asyncio") -> dict[str, Any]:
    """A successful web search answer for ``q`` with ``extra`` parameters."""
    reply = ask(fake, WEB_PATH, [("q", q), *extra])
    assert reply.status == 200, reply.body[:300]
    data: dict[str, Any] = body(reply)
    return data


def test_default_web_answer_has_every_documented_section(fake: FakeBrave) -> None:
    data = web(fake, q="hello brave fake")
    assert data["type"] == "search"
    assert data["query"]["original"] == "hello brave fake"
    assert data["query"]["more_results_available"] is True
    assert "altered" not in data["query"]
    assert len(data["web"]["results"]) == 20
    assert (len(data["news"]["results"]), len(data["videos"]["results"])) == (3, 3)
    assert len(data["faq"]["results"]) == 2
    discussions = data["discussions"]["results"]
    assert len(discussions) == 2
    assert set(discussions[0]["data"]) >= {"forum_name", "num_answers", "score", "question", "top_comment"}
    [infobox] = data["infobox"]["results"]
    assert infobox["attributes"] and infobox["long_desc"]
    assert "locations" not in data and "summarizer" not in data
    first = data["web"]["results"][0]
    assert {"title", "url", "description", "age", "page_age", "meta_url", "profile"} <= set(first)
    descriptions = " ".join(r["description"] for r in data["web"]["results"])
    assert "<strong>" in descriptions and "&amp;" in descriptions and "&#39;" in descriptions
    assert any("thumbnail" in r for r in data["web"]["results"])
    assert not any("extra_snippets" in r for r in data["web"]["results"])
    refs = data["mixed"]["main"]
    assert {"type": "web", "index": 19, "all": False} in refs
    assert {"type": "news", "all": True} in refs
    assert data["mixed"]["side"] == [{"type": "infobox", "index": 0, "all": False}]


def test_web_results_share_urls_with_news_and_videos_so_dedup_matters(fake: FakeBrave) -> None:
    data = web(fake)
    web_urls = {r["url"] for r in data["web"]["results"]}
    assert web_urls & {r["url"] for r in data["news"]["results"]}
    assert web_urls & {r["url"] for r in data["videos"]["results"]}
    assert web_urls & {r["url"] for r in data["faq"]["results"]}


def test_extra_snippets_only_when_asked(fake: FakeBrave) -> None:
    data = web(fake, ("extra_snippets", "true"))
    with_snippets = [r for r in data["web"]["results"] if "extra_snippets" in r]
    assert with_snippets and len(with_snippets) < len(data["web"]["results"])
    assert all(1 <= len(r["extra_snippets"]) <= 5 for r in with_snippets)


def test_text_decorations_false_strips_highlighting(fake: FakeBrave) -> None:
    data = web(fake, ("text_decorations", "false"))
    for section in ("web", "news", "videos", "discussions"):
        assert all("<strong>" not in r["description"] for r in data[section]["results"])
    assert "&amp;" in " ".join(r["description"] for r in data["web"]["results"])


def test_count_and_offset_page_through_thirty_results(fake: FakeBrave) -> None:
    def page(count: int, offset: int) -> tuple[list[str], bool]:
        data = web(fake, ("count", str(count)), ("offset", str(offset)))
        return [r["url"] for r in data["web"]["results"]], data["query"]["more_results_available"]

    first, more = page(20, 0)
    second, more_after = page(20, 1)
    assert (len(first), more, len(second), more_after) == (20, True, 10, False)
    everything = first + second
    assert len(set(everything)) == 30
    assert page(10, 1) == (everything[10:20], True)
    assert page(10, 2) == (everything[20:30], False)
    assert page(5, 9) == ([], False)
    assert page(1, 0) == (everything[:1], True)


def test_result_filter_keeps_only_the_listed_sections(fake: FakeBrave) -> None:
    assert set(web(fake, ("result_filter", "web,news"))) == {"type", "query", "web", "news"}
    assert set(web(fake, ("result_filter", "query"))) == {"type", "query"}
    local = web(fake, ("result_filter", "web,locations"))
    assert len(local["locations"]["results"]) == 2
    assert local["query"]["local_decision"] == "keep"


def test_summarizer_key_only_when_summary_is_requested(fake: FakeBrave) -> None:
    assert "summarizer" not in web(fake)
    for flag in ("1", "true"):
        data = web(fake, ("summary", flag))
        assert data["summarizer"]["type"] == "summarizer"
        assert json.loads(data["summarizer"]["key"])["query"] == "python asyncio"
        assert len(data["web"]["results"]) == 20


def test_result_filter_with_summarizer_drops_web_results_like_brave_issue_272(fake: FakeBrave) -> None:
    only = web(fake, ("summary", "1"), ("result_filter", "summarizer"))
    assert set(only) == {"type", "query", "summarizer"}
    mixed = web(fake, ("summary", "1"), ("result_filter", "web,summarizer,news"))
    assert "web" not in mixed and "news" in mixed and "summarizer" in mixed
    without_summary = web(fake, ("result_filter", "web,summarizer"))
    assert "web" not in without_summary and "summarizer" not in without_summary


def test_a_query_set_to_no_results_empties_every_section(fake: FakeBrave) -> None:
    fake.no_results_for.update({"zzz nothing zzz", "nothing"})
    data = web(fake, ("summary", "1"), q="ZZZ  nothing zzz")
    assert data["web"]["results"] == []
    for section in ("news", "videos", "discussions", "faq", "infobox"):
        assert data[section]["results"] == [], section
    assert "summarizer" not in data
    assert data["query"]["more_results_available"] is False
    for path in (NEWS_PATH, VIDEOS_PATH, IMAGES_PATH):
        assert body(ask(fake, path, [("q", "nothing")]))["results"] == []
    assert web(fake, q="something else")["web"]["results"]  # only the named queries are empty


def test_web_filter_of_an_empty_query_keeps_empty_sections(fake: FakeBrave) -> None:
    fake.no_results_for.add("nothing please")
    data = web(fake, ("result_filter", "web,locations"), q="nothing please")
    assert data["web"]["results"] == [] and data["locations"]["results"] == []


def test_a_spellcheck_rewrite_applies_unless_spellcheck_is_off(fake: FakeBrave) -> None:
    fake.spellcheck_rewrites.update({"pythn asyncio": "python asyncio", "pythn": "python"})
    data = web(fake, q="pythn asyncio")
    assert data["query"]["original"] == "pythn asyncio"
    assert data["query"]["altered"] == "python asyncio"
    off = web(fake, ("spellcheck", "0"), q="pythn asyncio")
    assert "altered" not in off["query"] and off["query"]["spellcheck_off"] is True
    news = body(ask(fake, NEWS_PATH, [("q", "pythn")]))
    assert news["query"]["altered"] == "python"


# ---------------------------------------------------------------------------------------------- other endpoints


@pytest.mark.parametrize(
    ("path", "top", "kind"), [(NEWS_PATH, "news", "news_result"), (VIDEOS_PATH, "videos", "video_result")]
)
def test_news_and_videos_honour_count_and_offset(fake: FakeBrave, path: str, top: str, kind: str) -> None:
    default = body(ask(fake, path, [("q", "python asyncio")]))
    assert default["type"] == top
    assert default["query"]["original"] == "python asyncio"
    assert len(default["results"]) == 20
    assert {r["type"] for r in default["results"]} == {kind}
    everything = body(ask(fake, path, [("q", "x"), ("count", "50")]))["results"]
    assert len(everything) >= 25
    second = body(ask(fake, path, [("q", "x"), ("count", "10"), ("offset", "1")]))["results"]
    assert [r["url"] for r in second] == [r["url"] for r in everything[10:20]]


def test_news_extra_snippets_and_video_metadata(fake: FakeBrave) -> None:
    plain = body(ask(fake, NEWS_PATH, [("q", "x"), ("count", "50")]))["results"]
    assert not any("extra_snippets" in r for r in plain)
    rich = body(ask(fake, NEWS_PATH, [("q", "x"), ("count", "50"), ("extra_snippets", "1")]))["results"]
    assert any("extra_snippets" in r for r in rich)
    assert all({"source", "age", "breaking", "meta_url"} <= set(r) for r in rich)
    videos = body(ask(fake, VIDEOS_PATH, [("q", "x")]))
    assert {"duration", "views", "creator", "publisher"} <= set(videos["results"][0]["video"])
    assert videos["extra"] == {"might_be_offensive": False}


def test_images_go_up_to_two_hundred_distinct_results(fake: FakeBrave) -> None:
    default = body(ask(fake, IMAGES_PATH, [("q", "python asyncio")]))
    assert default["type"] == "images" and len(default["results"]) == 50
    results = body(ask(fake, IMAGES_PATH, [("q", "x"), ("count", "200")]))["results"]
    assert len(results) == 200
    assert len({r["properties"]["url"] for r in results}) == 200
    assert len({r["url"] for r in results}) == 200
    for image in results:
        assert image["type"] == "image_result"
        assert {"src", "width", "height"} <= set(image["thumbnail"])
        assert image["source"] and image["properties"]["url"].startswith("https://")


# ---------------------------------------------------------------------------------------------- summarizer


def summary_key(fake: FakeBrave, q: str = "python asyncio") -> str:
    """The summarizer key a web search with summary=1 hands out."""
    key: str = web(fake, ("summary", "1"), q=q)["summarizer"]["key"]
    return key


def poll(fake: FakeBrave, key: str, *extra: tuple[str, str]) -> dict[str, Any]:
    """One successful summarizer poll."""
    reply = ask(fake, SUMMARIZER_PATH, [("key", key), *extra])
    assert reply.status == 200, reply.body[:300]
    data: dict[str, Any] = body(reply)
    return data


def test_summarizer_is_pending_then_complete() -> None:
    fake = FakeBrave(summarizer_pending_polls=2)
    key = summary_key(fake)
    assert poll(fake, key) == {"type": "summarizer", "status": "pending"}
    assert poll(fake, key)["status"] == "pending"
    done = poll(fake, key)
    assert done["type"] == "summarizer" and done["status"] == "complete" and done["title"]
    kinds = [m["type"] for m in done["summary"]]
    assert "token" in kinds and "inline_reference" not in kinds
    start = kinds.index("enum_start")
    assert done["summary"][start]["data"] == "ul"
    assert kinds[start : start + 4] == ["enum_start", "enum_item", "enum_item", "enum_end"]
    items = [m["data"] for m in done["summary"] if m["type"] == "enum_item"]
    assert all({"name", "url", "text"} <= set(item) for item in items)
    assert done["followups"]
    assert done["enrichments"]["raw"]
    assert all({"title", "url"} <= set(c) for c in done["enrichments"]["context"])
    assert "entities_infos" not in done


def test_summarizer_inline_references_and_entity_info_on_request() -> None:
    fake = FakeBrave(summarizer_pending_polls=0)
    key = summary_key(fake)
    done = poll(fake, key, ("inline_references", "true"), ("entity_info", "1"))
    refs = [m["data"] for m in done["summary"] if m["type"] == "inline_reference"]
    assert refs
    for ref in refs:
        assert {"url", "number", "start_index", "end_index"} <= set(ref)
        assert ref["start_index"] < ref["end_index"]
    assert done["entities_infos"]


def test_summarizer_failure_and_never_ending_keys() -> None:
    fake = FakeBrave(summarizer_pending_polls=1)
    fake.summary_failing.add("a failing summary")
    fake.summary_never_ready.add("a summary never ready")
    failing = summary_key(fake, "a failing summary")
    assert poll(fake, failing)["status"] == "pending"
    assert poll(fake, failing) == {"type": "summarizer", "status": "failed"}
    never = summary_key(fake, "a summary never ready")
    assert {poll(fake, never)["status"] for _ in range(8)} == {"pending"}


def test_summarizer_polls_are_not_billed() -> None:
    fake = FakeBrave(monthly_limit=5, summarizer_pending_polls=0, clock=FakeClock())
    key = summary_key(fake)
    for _ in range(3):
        reply = ask(fake, SUMMARIZER_PATH, [("key", key)])
        assert reply.status == 200
    assert reply.header("X-RateLimit-Remaining") == "46, 4"


def test_summarizer_key_survives_url_encoding(fake: FakeBrave) -> None:
    key = summary_key(fake)
    with mock_client(fake) as client:
        response = client.get(SUMMARIZER_PATH, params={"key": key})
    assert response.status_code == 200
    assert response.json()["type"] == "summarizer"


# ---------------------------------------------------------------------------------------------- fault queue


def test_inject_rejects_unknown_faults(fake: FakeBrave) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        fake.inject("teapot")
    with pytest.raises(ValueError, match="times"):
        fake.inject("500", times=0)


def test_faults_are_used_in_order_by_matching_paths(fake: FakeBrave) -> None:
    fake.inject("500", path="/news/search")
    fake.inject("503", times=2)
    assert fake.pending_faults() == 3
    assert ask(fake, WEB_PATH).status == 503
    assert ask(fake, NEWS_PATH, [("q", "x")]).status == 500
    assert ask(fake, NEWS_PATH, [("q", "x")]).status == 503
    assert ask(fake, WEB_PATH).status == 200
    assert fake.pending_faults() == 0
    assert [r.fault for r in fake.requests] == ["503", "500", "503", None]
    assert fake.hits() == 4 and fake.hits("/news/search") == 2


def test_reset_forgets_everything(fake: FakeBrave) -> None:
    fake.inject("500")
    ask(fake)
    fake.inject("503")
    fake.reset()
    assert fake.requests == [] and fake.pending_faults() == 0
    assert ask(fake).status == 200
    assert fake.stats() == {"requests": 1, "rate_limited": 0, "by_path": {WEB_PATH: 1}}


# (fault, status, Brave error code or None, content type prefix)
HTTP_FAULT_CASES: list[tuple[str, int, str | None, str]] = [
    ("500", 500, None, "text/plain"),
    ("502", 502, None, "text/html"),
    ("503", 503, None, "text/plain"),
    ("504", 504, None, "text/html"),
    ("429", 429, "RATE_LIMITED", "application/json"),
    ("429_quota", 429, "QUOTA_LIMITED", "application/json"),
    ("422_validation", 422, "VALIDATION", "application/json"),
    ("422_token", 422, "SUBSCRIPTION_TOKEN_INVALID", "application/json"),
    ("400_not_in_plan", 400, "OPTION_NOT_IN_PLAN", "application/json"),
    ("403", 403, "RESOURCE_NOT_ALLOWED", "application/json"),
    ("404_subscription", 404, "SUBSCRIPTION_NOT_FOUND", "application/json"),
    ("html_error", 502, None, "text/html"),
]


def check_http_fault(response: httpx2.Response, status: int, code: str | None, content_type: str) -> None:
    """Assert an injected HTTP fault arrived with its status, content type, rate headers and Brave code."""
    assert response.status_code == status
    assert response.headers["content-type"].startswith(content_type)
    for name in RATE_HEADERS:
        assert name in response.headers
    if code is None:
        with pytest.raises(ValueError):
            response.json()
    else:
        error = response.json()["error"]
        assert (error["code"], error["status"]) == (code, status)


@pytest.mark.parametrize(("fault", "status", "code", "content_type"), HTTP_FAULT_CASES)
def test_http_faults_through_mock_transport(
    fake: FakeBrave, fault: str, status: int, code: str | None, content_type: str
) -> None:
    fake.inject(fault)
    with mock_client(fake) as client:
        check_http_fault(client.get(WEB_PATH, params={"q": "x"}), status, code, content_type)
        assert client.get(WEB_PATH, params={"q": "x"}).status_code == 200


@pytest.mark.parametrize(("fault", "status", "code", "content_type"), HTTP_FAULT_CASES)
def test_http_faults_through_the_real_server(
    server: FakeBraveServer, http: httpx2.Client, fault: str, status: int, code: str | None, content_type: str
) -> None:
    server.fake.inject(fault)
    check_http_fault(http.get(WEB_PATH, params={"q": "x"}), status, code, content_type)
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_fault_error_bodies_match_brave_meta(fake: FakeBrave) -> None:
    fake.inject("400_not_in_plan")
    fake.inject("403")
    fake.inject("404_subscription")
    fake.inject("422_validation")
    assert error_of(ask(fake))["meta"] == {"component": "authentication", "plan": "Free"}
    assert error_of(ask(fake))["meta"] == {"component": "api"}
    assert error_of(ask(fake))["meta"] == {"component": "subscriptions"}
    assert error_of(ask(fake))["meta"]["errors"][0]["loc"] == ["query", "count"]


def test_injected_429_headers(fake: FakeBrave) -> None:
    fake.inject("429", retry_after=3)
    fake.inject("429", reset_only=True, reset=7)
    with mock_client(fake) as client:
        plain = client.get(WEB_PATH, params={"q": "x"})
        assert plain.headers["retry-after"] == "3"
        assert plain.headers["x-ratelimit-remaining"].startswith("0, ")
        bare = client.get(WEB_PATH, params={"q": "x"})
    assert bare.headers["x-ratelimit-reset"].startswith("7, ")
    assert "retry-after" not in bare.headers and "x-ratelimit-limit" not in bare.headers
    assert bare.json()["error"]["code"] == "RATE_LIMITED"
    assert fake.rate_limited_count == 2


@pytest.mark.parametrize("face", ["mock", "server"])
def test_non_brave_answers(face: str, fake: FakeBrave) -> None:
    def run(client: httpx2.Client) -> None:
        fake.inject("403_bare")
        bare = client.get(WEB_PATH, params={"q": "x"})
        assert bare.status_code == 403 and bare.headers["content-type"].startswith("text/html")
        assert not any(name in bare.headers for name in RATE_HEADERS)
        fake.inject("invalid_json")
        broken = client.get(WEB_PATH, params={"q": "x"})
        assert broken.status_code == 200 and broken.headers["content-type"] == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken.content)
        fake.inject("empty_body")
        empty = client.get(WEB_PATH, params={"q": "x"})
        assert (empty.status_code, empty.content, empty.headers["content-length"]) == (200, b"", "0")
        fake.inject("truncated_gzip")
        cut = client.get(WEB_PATH, params={"q": "x"})
        assert cut.headers["content-encoding"] == "gzip"
        with pytest.raises(json.JSONDecodeError):
            json.loads(cut.content)

    with_client(face, fake, run)


@pytest.mark.parametrize("face", ["mock", "server"])
def test_oversize_is_valid_json_of_the_requested_size_without_length(face: str, fake: FakeBrave) -> None:
    def run(client: httpx2.Client) -> None:
        fake.inject("oversize", size=300_000)
        response = client.get(WEB_PATH, params={"q": "x"})
        assert response.status_code == 200
        assert "content-length" not in response.headers
        assert len(response.content) == 300_000
        assert json.loads(response.content)["type"] == "search"

    with_client(face, fake, run)


def test_oversize_defaults_to_eight_mebibytes_streamed(fake: FakeBrave) -> None:
    fake.inject("oversize")
    reply = ask(fake)
    assert reply.streamed and reply.body == b""
    assert sum(len(chunk) for chunk in reply.iter_body()) == 8 * 1024 * 1024
    fake.inject("oversize", size=200_000)
    zipped = ask(fake, headers={"Accept-Encoding": "gzip"})
    assert zipped.header("Content-Encoding") == "gzip"
    assert len(gzip.decompress(b"".join(zipped.iter_body()))) == 200_000


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


# ---------------------------------------------------------------------------------------------- transport faults


def test_transport_faults_through_mock_transport(fake: FakeBrave) -> None:
    with mock_client(fake) as client:
        fake.inject("refused")
        with pytest.raises(httpx2.ConnectError):
            client.get(WEB_PATH, params={"q": "x"})
        for name in ("timeout", "hang"):
            fake.inject(name)
            with pytest.raises(httpx2.ReadTimeout):
                client.get(WEB_PATH, params={"q": "x"})
        fake.inject("reset")
        with pytest.raises(httpx2.RemoteProtocolError):
            client.get(WEB_PATH, params={"q": "x"})
        fake.inject("slow_body", delay=0, chunk_size=100)
        slow = client.get(WEB_PATH, params={"q": "x"})
        assert slow.json()["query"]["original"] == "x"
    assert [r.status for r in fake.requests] == [0, 0, 0, 200, 200]
    assert [r.fault for r in fake.requests] == ["refused", "timeout", "hang", "reset", "slow_body"]


@pytest.mark.anyio
async def test_transport_faults_through_async_mock_transport(fake: FakeBrave) -> None:
    async with httpx2.AsyncClient(
        transport=fake.mock_transport(), base_url=BASE, headers={"X-Subscription-Token": VALID_KEY}
    ) as client:
        fake.inject("slow_body", delay=0.001, chunk_size=1000)
        slow = await client.get(WEB_PATH, params={"q": "x"})
        assert slow.json()["type"] == "search"
        fake.inject("reset")
        with pytest.raises(httpx2.RemoteProtocolError):
            await client.get(WEB_PATH, params={"q": "x"})
        fake.inject("oversize", size=100_000)
        async with client.stream("GET", WEB_PATH, params={"q": "x"}) as streamed:
            assert "content-length" not in streamed.headers
            received = sum([len(chunk) async for chunk in streamed.aiter_bytes()])
        assert received == 100_000


def test_reset_and_refused_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("reset")
    with pytest.raises((httpx2.ReadError, httpx2.RemoteProtocolError)):
        http.get(WEB_PATH, params={"q": "x"})
    server.fake.inject("refused")
    with pytest.raises((httpx2.RemoteProtocolError, httpx2.ReadError)):
        http.get(WEB_PATH, params={"q": "x"})
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_timeout_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("timeout", seconds=30)
    with pytest.raises(httpx2.ReadTimeout):
        http.get(WEB_PATH, params={"q": "x"}, timeout=0.2)
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_slow_body_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("slow_body", delay=0.02, chunk_size=1024)
    started = time.monotonic()
    response = http.get(WEB_PATH, params={"q": "x"})
    elapsed = time.monotonic() - started
    assert response.json()["query"]["original"] == "x"
    pieces = -(-int(response.headers["content-length"]) // 1024)
    assert pieces >= 3
    assert elapsed >= (pieces - 1) * 0.02


def test_server_stops_promptly_with_a_hanging_request_in_flight() -> None:
    outcome: list[BaseException | int] = []
    srv = FakeBraveServer().start()
    srv.fake.inject("hang", seconds=30)

    def call() -> None:
        try:
            with httpx2.Client(headers={"X-Subscription-Token": VALID_KEY}, timeout=20.0) as client:
                outcome.append(client.get(srv.base_url + WEB_PATH, params={"q": "x"}).status_code)
        except httpx2.HTTPError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    assert srv.wait_for_requests(1, timeout=5.0)
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 1.5
    worker.join(5.0)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], httpx2.TransportError)


def test_server_serves_concurrent_keep_alive_requests(server: FakeBraveServer, http: httpx2.Client) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def call(i: int) -> None:
        status = http.get(WEB_PATH, params={"q": f"query {i}", "count": "1"}).status_code
        with lock:
            results.append(status)

    workers = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10.0)
    assert results == [200] * 16
    assert server.fake.hits(WEB_PATH) == 16


# ---------------------------------------------------------------------------------------------- control endpoints


def test_control_endpoints(server: FakeBraveServer, http: httpx2.Client) -> None:
    injected = http.post("/__fake/inject", json={"fault": "503", "path": "/web/search", "times": 2})
    assert injected.json() == {"ok": True, "pending": 2}
    assert http.post("/__fake/inject", json={"fault": "429", "retry_after": 4}).status_code == 200
    assert [http.get(WEB_PATH, params={"q": "x"}).status_code for _ in range(2)] == [503, 503]
    limited = http.get(WEB_PATH, params={"q": "x"})
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "4")
    assert http.get(NEWS_PATH, params={"q": "x"}).status_code == 200
    assert http.get("/__fake/stats").json() == {
        "requests": 4,
        "rate_limited": 1,
        "by_path": {WEB_PATH: 3, NEWS_PATH: 1},
    }
    assert http.post("/__fake/reset").json() == {"ok": True}
    assert http.get("/__fake/stats").json() == {"requests": 0, "rate_limited": 0, "by_path": {}}
    assert server.fake.requests == []


def test_control_endpoints_reject_bad_input(http: httpx2.Client) -> None:
    assert http.post("/__fake/inject", json={"fault": "teapot"}).status_code == 400
    assert http.post("/__fake/inject", json={"path": "/web/search"}).status_code == 400
    assert http.post("/__fake/inject", content=b"not json").status_code == 400
    assert http.post("/__fake/inject", json=["503"]).status_code == 400
    assert http.get("/__fake/nothing").status_code == 404
    assert http.get("/__fake/inject").status_code == 404


def test_module_runs_a_foreground_server_until_interrupted() -> None:
    # Started as nohup or a background job would start it (SIGINT ignored): Ctrl-C must still stop it.
    with foreground_server("testkit.brave", "--rate", "1", "--monthly", "2000") as (process, url):
        response = httpx2.get(url + WEB_PATH, params={"q": "x"}, headers={"X-Subscription-Token": VALID_KEY})
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit"] == "1, 2000"
        assert interrupt(process) == (0, "")


def test_fault_names_are_all_exercised() -> None:
    exercised = {case[0] for case in HTTP_FAULT_CASES} | {
        "403_bare",
        "invalid_json",
        "empty_body",
        "oversize",
        "truncated_gzip",
        "refused",
        "reset",
        "slow_body",
        "timeout",
        "hang",
    }
    assert exercised == FAULTS
