"""The bench's upstream: a recorded page sliced as Brave pages it, behind the fake's checks; direct GETs stay local."""

from __future__ import annotations

from typing import Any

import pytest

from bench.upstream import DIRECT_KEY, DirectClient, RecordedPageBrave, page_slice
from testkit.brave import VALID_KEY, WEB_PATH

# ------------------------------------------------------------------------------------------------ upstream

PAGE: dict[str, Any] = {
    "type": "search",
    "query": {"original": "recorded", "more_results_available": True},
    "mixed": {"type": "mixed"},
    "videos": {"type": "videos", "results": [{"title": "v"}]},
    "web": {
        "type": "search",
        "results": [
            {"title": f"r{i}", "url": f"https://e.example/{i}", "description": "<strong>x</strong> &quot;y&quot;"}
            for i in range(5)
        ]
        + [{"title": "with extra", "url": "https://e.example/x", "extra_snippets": ["s"]}],
    },
}


def test_page_slice_returns_the_requested_page_and_sections_only() -> None:
    body = page_slice(PAGE, {"q": "hello", "count": "2", "offset": "1", "result_filter": "web"})
    assert set(body) == {"type", "query", "web"}
    assert [r["title"] for r in body["web"]["results"]] == ["r2", "r3"]
    assert body["query"]["original"] == "hello"
    assert body["query"]["more_results_available"] is True


def test_page_slice_follows_decorations_and_extra_snippets_like_brave() -> None:
    plain = page_slice(PAGE, {"q": "q", "count": "20", "text_decorations": "false"})
    assert "mixed" in plain and "videos" in plain
    assert plain["web"]["results"][0]["description"] == "x &quot;y&quot;"
    assert "extra_snippets" not in plain["web"]["results"][-1]
    assert plain["query"]["more_results_available"] is False
    rich = page_slice(PAGE, {"q": "q", "count": "20", "extra_snippets": "true"})
    assert rich["web"]["results"][0]["description"].startswith("<strong>")
    assert rich["web"]["results"][-1]["extra_snippets"] == ["s"]
    assert PAGE["web"]["results"][0]["description"].startswith("<strong>"), "the recorded page is never mutated"


def test_recorded_page_fake_keeps_the_fakes_checks() -> None:
    fake = RecordedPageBrave(PAGE, api_keys=(VALID_KEY,), rate_per_second=1, monthly_limit=0)
    headers = {"x-subscription-token": VALID_KEY}
    ok = fake.handle("GET", WEB_PATH, [("q", "hello"), ("count", "3")], headers)
    assert ok.status == 200
    assert [r["title"] for r in ok.json()["web"]["results"]] == ["r0", "r1", "r2"]
    assert fake.handle("GET", WEB_PATH, [("q", "again")], headers).status == 429
    assert fake.rate_limited_count == 1
    bad_key = fake.handle("GET", WEB_PATH, [("q", "x")], {"x-subscription-token": "wrong-key-not-real"})
    assert bad_key.status == 422


def test_direct_client_only_goes_to_the_local_fake() -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        DirectClient("https://api.search.brave.com")
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        DirectClient("http://localhost:8080")
    assert DIRECT_KEY != VALID_KEY
