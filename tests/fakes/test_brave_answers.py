"""The fake answers as Brave does: web sections and paging, news, videos, images, and the summarizer's polls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from testkit.brave import IMAGES_PATH, NEWS_PATH, SUMMARIZER_PATH, VIDEOS_PATH, WEB_PATH, FakeBrave
from testkit.clock import FakeClock
from tests.fakes.brave_calls import ask, body, mock_client

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
