"""Several pages in one read (``urls``): at once, one shared budget, one section each, a failure stays its own."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from brave_search_mcp.compose import open_tools
from brave_search_mcp.reader import split_budget
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.settings import make_settings
from testkit.sites import FakeSite, Reply, Seen
from testkit.sites.pages import page

pytestmark = pytest.mark.anyio


def _article(words: str, count: int) -> str:
    filler = "More of the same story, told at length. " * 8
    paragraphs = "".join(f"<p>{words} {n}. {filler}</p>" for n in range(count))
    body = f"<article><h1>{words}</h1>{paragraphs}</article>"
    return f"<html><head><title>{words}</title></head><body>{body}</body></html>"


@pytest.fixture
def internal() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.2") as running:  # loopback that is NOT opted in
        yield running


@pytest.fixture
async def tools() -> AsyncIterator[ToolBoundary]:
    async with open_tools(make_settings(read_allowed_hosts=("127.0.0.1",))) as boundary:
        yield boundary


async def _read(tools: ToolBoundary, **arguments: Any) -> ToolOutcome:
    return await tools.call("read_url", arguments)


async def test_three_urls_one_refused_give_two_pages_and_a_fetch_blocked_section_within_one_budget(
    tools: ToolBoundary, site: FakeSite, internal: FakeSite
) -> None:
    site.page("/a", _article("Alpha river", 12))
    site.page("/b", _article("Bravo harbour", 12))
    internal.page("/secret", _article("Internal only", 2))
    urls = [site.url("/a"), internal.url("/secret"), site.url("/b")]
    outcome = await _read(tools, urls=urls, max_chars=3000)
    assert not outcome.is_error, outcome.text
    pages = outcome.structured["pages"]
    assert [p["requested_url"] for p in pages] == urls  # the order asked, whatever finished first
    first, refused, third = pages
    assert "Alpha river" in first["content"] and "Bravo harbour" in third["content"]
    assert refused["error"]["code"] == "FETCH_BLOCKED" and "loopback" in refused["error"]["message"]
    assert len(first["content"]) + len(third["content"]) <= 3000  # one budget, shared
    assert first["next_start_char"] and third["next_start_char"]  # each pages on on its own
    assert internal.requests == []
    meta = outcome.structured["meta"]
    assert (meta["read"], meta["failed"], meta["max_chars"]) == (2, 1, 3000)
    text = outcome.text
    assert text.startswith("Read 2 of 3 pages within max_chars 3000 (shared); 1 failed.")
    assert "--- page 2 of 3 ---\nURL: " + internal.url("/secret") + "\nFETCH_BLOCKED: Refused to read" in text
    assert f"call read_url with url='{site.url('/b')}' and format='markdown', start_char={third['end_char']}" in text
    follow = await _read(tools, url=site.url("/b"), start_char=third["next_start_char"])
    assert not follow.is_error and follow.structured["start_char"] == third["end_char"]
    assert follow.structured["meta"]["cached"] is True  # paging on costs no request


async def test_a_short_page_leaves_its_unused_share_to_the_others(tools: ToolBoundary, site: FakeSite) -> None:
    site.page("/long1", _article("First long", 20))
    site.page("/short", "<html><body><article><p>" + "A short note. " * 12 + "</p></article></body></html>")
    site.page("/long2", _article("Second long", 20))
    urls = [site.url("/long1"), site.url("/short"), site.url("/long2")]
    outcome = await _read(tools, urls=urls, max_chars=6000)
    first, short, second = outcome.structured["pages"]
    assert "next_start_char" not in short and short["total_chars"] < 300  # all of it
    used = len(first["content"]) + len(short["content"]) + len(second["content"])
    assert 5000 < used <= 6000
    assert abs(len(first["content"]) - len(second["content"])) < 600  # even, up to where each part may end


def test_the_budget_is_split_evenly_and_what_a_page_leaves_goes_to_the_others() -> None:
    assert split_budget([10_000, 10_000, 10_000], 9000) == [3000, 3000, 3000]
    assert split_budget([10_000, 200, 10_000], 9000) == [4400, 200, 4400]
    assert split_budget([1000, None, 6000], 9000) == [1000, 0, 6000]  # a failed page needs nothing
    assert split_budget([100, 200, 300], 9000) == [100, 200, 300]
    assert split_budget([5000, 2500, 8000], 9000) == [3250, 2500, 3250]
    assert sum(split_budget([7, 11, 13_000, 9_999], 10_001)) <= 10_001


async def test_the_pages_are_read_at_once(tools: ToolBoundary, site: FakeSite) -> None:
    both = threading.Barrier(2, timeout=5)  # each answer waits for the other request: only concurrent reads pass

    def together(seen: Seen) -> Reply:
        try:
            both.wait()
        except threading.BrokenBarrierError:
            return Reply(status=503)
        return Reply(body=_article(seen.path, 3).encode())

    site.route("/one", together)
    site.route("/two", together)
    outcome = await _read(tools, urls=[site.url("/one"), site.url("/two")])
    assert outcome.structured["meta"]["read"] == 2, outcome.text


async def test_when_every_page_fails_the_call_fails_naming_each(
    tools: ToolBoundary, site: FakeSite, internal: FakeSite
) -> None:
    site.route("/gone", Reply(status=404))
    outcome = await _read(tools, urls=[site.url("/gone"), internal.url("/x")])
    assert outcome.is_error
    error = outcome.structured["error"]
    assert error["code"] == "NOT_FOUND"
    assert [(p["url"], p["code"]) for p in error["details"]["pages"]] == [
        (site.url("/gone"), "NOT_FOUND"),
        (internal.url("/x"), "FETCH_BLOCKED"),
    ]
    first_line = outcome.text.split(" (not retryable)")[0]  # the text names every page, as the JSON does
    assert first_line.startswith("NOT_FOUND: None of the 2 pages could be read: [1] ")
    assert f"[1] {site.url('/gone')} NOT_FOUND: " in first_line
    assert f"[2] {internal.url('/x')} FETCH_BLOCKED: " in first_line


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"url": "https://a.example/", "urls": ["https://b.example/"]}, "exactly one of url or urls"),
        ({}, "exactly one of url or urls"),
        ({"urls": []}, "urls"),
        ({"urls": [f"https://e.example/{n}" for n in range(6)]}, "urls"),
        ({"urls": ["https://a.example/"], "start_char": 10}, "start_char and section are for one page"),
        ({"urls": ["https://a.example/"], "section": "Install"}, "start_char and section are for one page"),
        ({"url": "https://a.example/", "links": "some"}, "links"),
    ],
)
async def test_bad_arguments_are_invalid_argument(tools: ToolBoundary, arguments: dict[str, Any], says: str) -> None:
    outcome = await _read(tools, **arguments)
    assert outcome.is_error and outcome.structured["error"]["code"] == "INVALID_ARGUMENT"
    assert says in outcome.structured["error"]["message"]


async def test_a_url_in_urls_that_is_not_one_fails_the_call_before_any_request(
    tools: ToolBoundary, site: FakeSite
) -> None:
    site.page("/a", page("article.html"))
    outcome = await _read(tools, urls=[site.url("/a"), "not a url"])
    assert outcome.is_error and outcome.structured["error"]["code"] == "INVALID_ARGUMENT"
    assert outcome.structured["error"]["details"]["field"] == "urls[1]"
    assert site.requests == []


async def test_a_url_the_safety_rules_refuse_is_its_own_section(tools: ToolBoundary, site: FakeSite) -> None:
    site.page("/a", page("article.html"))
    outcome = await _read(tools, urls=["file:///etc/passwd", site.url("/a")])
    refused, read = outcome.structured["pages"]
    assert refused["error"]["code"] == "FETCH_BLOCKED" and "only http and https" in refused["error"]["message"]
    assert read["title"] == "Why the river town rebuilt its wooden bridge"


async def test_links_come_with_each_page(tools: ToolBoundary, site: FakeSite) -> None:
    site.page("/en/3.2/retries.html", page("docs.html"))
    site.page("/bridge", page("article.html"))
    outcome = await _read(tools, urls=[site.url("/en/3.2/retries.html"), site.url("/bridge")], links="same_site")
    docs, article = outcome.structured["pages"]
    assert docs["links_total"] == 4 and article["links"][0]["text"] == "download it here"
    assert outcome.text.count("Links (in the content, on this site):") == 2
