"""The fake checks requests as Brave does: the token, every parameter, the rate window and quota, gzip."""

from __future__ import annotations

import gzip
import json

import httpx2
import pytest

from testkit.brave import IMAGES_PATH, NEWS_PATH, SUMMARIZER_PATH, VALID_KEY, VIDEOS_PATH, WEB_PATH, FakeBrave
from testkit.clock import FakeClock
from tests.fakes.brave_calls import RATE_HEADERS, Params, ask, error_of, mock_client

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
