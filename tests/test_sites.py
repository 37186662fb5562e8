"""sites / exclude_sites through the tools, on Brave and on SearXNG: only the named domains come back, an excluded
one never does, a bad entry is INVALID_ARGUMENT before any request, whatever the upstream still returns outside
the filter is dropped and counted, and a filter that leaves nothing is NO_RESULTS naming it."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.models.sites import SiteFilter
from brave_search_mcp.reader.links import same_site
from brave_search_mcp.render.text import site_of
from brave_search_mcp.usecases.llm_context import parse_and_render
from testkit.brave.brave import WEB_PATH, FakeBrave
from testkit.brave.routes.llm_context import context_body
from testkit.searxng import FakeSearxng
from tests.test_searxng_tools import tools

pytestmark = pytest.mark.anyio
PROVIDERS = ["brave", "searxng"]


def urls(structured: dict[str, Any]) -> list[str]:
    return [r["url"] for section in structured["sections"] for r in section["results"] if r["url"]]


def host(url: str) -> str:
    return url.split("/")[2]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_sites_returns_only_results_from_that_domain(provider: str) -> None:
    brave, searxng = FakeBrave(rate_per_second=1000), FakeSearxng()
    async with tools(provider, searxng, brave) as boundary:
        plain = await boundary.call("brave_web_search", {"query": "python asyncio", "max_results": 20})
        outcome = await boundary.call("brave_web_search", {"query": "python asyncio", "sites": ["docs.python.org"]})
    assert not outcome.is_error, outcome.text
    assert {host(u) for u in urls(plain.structured)} != {"docs.python.org"}
    found = urls(outcome.structured)
    assert found and {host(u) for u in found} == {"docs.python.org"}
    site_filter = outcome.structured["meta"]["site_filter"]
    assert site_filter["sites"] == ["docs.python.org"] and "exclude_sites" not in site_filter
    if provider == "brave":  # one goggle; the FAQ answers Brave builds beside its results lie elsewhere: dropped
        assert site_filter == {"sites": ["docs.python.org"], "applied_as": "goggle", "dropped": 2}
        assert ("goggles", "$discard\n$site=docs.python.org") in brave.requests[-1].params
    else:
        assert site_filter == {"sites": ["docs.python.org"], "applied_as": "site: terms", "dropped": 0}
        assert searxng.search_requests()[-1].params["q"] == "python asyncio site:docs.python.org"
        assert brave.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_exclude_sites_removes_one_domain(provider: str) -> None:
    gone = "stackoverflow.com" if provider == "brave" else "site3.example.org"
    async with tools(provider, FakeSearxng()) as boundary:
        plain = await boundary.call("brave_web_search", {"query": "python asyncio", "max_results": 20})
        outcome = await boundary.call(
            "brave_web_search", {"query": "python asyncio", "max_results": 20, "exclude_sites": [gone]}
        )
    assert gone in {host(u) for u in urls(plain.structured)}
    left = {host(u) for u in urls(outcome.structured)}
    assert left and gone not in left
    assert {host(u) for u in urls(plain.structured)} - left == {gone}
    assert outcome.structured["meta"]["site_filter"]["exclude_sites"] == [gone]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("field", ["sites", "exclude_sites"])
async def test_a_bad_entry_is_invalid_argument_and_nothing_is_sent(provider: str, field: str) -> None:
    brave, searxng = FakeBrave(rate_per_second=1000), FakeSearxng()
    async with tools(provider, searxng, brave) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "q", field: ["docs.python.org", "https://x.org"]})
    error = outcome.structured["error"]
    assert outcome.is_error and error["code"] == "INVALID_ARGUMENT"
    assert error["details"]["field"] == field and "'https://x.org' has a scheme" in error["message"]
    assert brave.requests == [] and searxng.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_filter_that_leaves_nothing_is_no_results_naming_it(provider: str) -> None:
    searxng = FakeSearxng()
    searxng.pages = 0  # the engines find nothing on that site
    args = {"query": "python asyncio", "sites": ["nothing.example"], "exclude_sites": ["x.org"]}
    async with tools(provider, searxng) as boundary:
        outcome = await boundary.call("brave_web_search", args)
    error = outcome.structured["error"]
    assert outcome.is_error and error["code"] == "NO_RESULTS"
    assert "within sites [nothing.example], exclude_sites [x.org]" in error["message"]
    assert "never widened" in error["message"]
    assert error["details"]["site_filter"] == "sites [nothing.example], exclude_sites [x.org]"
    if provider == "brave":  # Brave's FAQ and infobox were all elsewhere
        assert error["details"]["dropped"] == 3 and "3 results from elsewhere dropped" in error["message"]
    assert outcome.structured["meta"]["provider"] == provider


async def test_what_searxng_s_engines_still_return_elsewhere_is_dropped_and_counted() -> None:
    searxng = FakeSearxng()
    searxng.extra_results = [{"url": "https://elsewhere.example.net/a", "title": "off site", "content": "x"}]
    async with tools("searxng", searxng) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "asyncio", "sites": ["docs.python.org"]})
    assert {host(u) for u in urls(outcome.structured)} == {"docs.python.org"}
    assert outcome.structured["meta"]["site_filter"]["dropped"] == 1
    assert "elsewhere.example.net" not in outcome.text


async def test_a_fallback_to_searxng_says_the_filter_went_as_terms() -> None:
    brave, searxng = FakeBrave(rate_per_second=1000), FakeSearxng()
    brave.inject("503", path=WEB_PATH, times=100)
    async with tools("brave,searxng", searxng, brave) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "python asyncio", "sites": ["docs.python.org"]})
    assert outcome.structured["meta"]["provider"] == "searxng"
    assert outcome.structured["meta"]["site_filter"]["applied_as"] == "site: terms"
    assert {host(u) for u in urls(outcome.structured)} == {"docs.python.org"}
    assert ("goggles", "$discard\n$site=docs.python.org") in brave.requests[0].params  # Brave was asked first


async def test_videos_on_brave_go_as_site_operators() -> None:
    brave = FakeBrave(rate_per_second=1000)
    async with tools("brave", FakeSearxng(), brave) as boundary:
        args = {"query": "python asyncio", "search_type": "videos", "sites": ["vimeo.com"]}
        outcome = await boundary.call("brave_web_search", args)
    assert {host(u) for u in urls(outcome.structured)} == {"vimeo.com"}
    assert outcome.structured["meta"]["site_filter"]["applied_as"] == "site: operators"
    assert outcome.structured["meta"]["query"] == "python asyncio"
    assert dict(brave.requests[-1].params)["q"] == "python asyncio site:vimeo.com"


async def test_llm_context_grounds_only_on_the_sites_and_says_so() -> None:
    async with tools("brave", FakeSearxng()) as boundary:
        only = await boundary.call("brave_llm_context", {"query": "tokio", "sites": ["docs.example.org"]})
        without = await boundary.call("brave_llm_context", {"query": "tokio", "exclude_sites": ["docs.example.org"]})
        nothing = await boundary.call("brave_llm_context", {"query": "tokio", "sites": ["nowhere.example.org"]})
        bad = await boundary.call("brave_llm_context", {"query": "tokio", "sites": ["*docs.example.org"]})
    assert [s["url"] for s in only.structured["sources"]] == ["https://docs.example.org/guide"]
    site_filter = only.structured["meta"]["site_filter"]
    assert site_filter == {"sites": ["docs.example.org"], "applied_as": "goggle", "dropped": 0}
    assert "docs.example.org" not in {host(s["url"]) for s in without.structured["sources"]}
    assert without.structured["sources"]
    assert nothing.structured["error"]["code"] == "NO_RESULTS"
    assert "within sites [nowhere.example.org]" in nothing.structured["error"]["message"]
    assert bad.structured["error"]["code"] == "INVALID_ARGUMENT"


def test_llm_context_drops_pages_outside_before_their_passages_count_as_seen() -> None:
    answer = context_body("tokio", local=True, urls=20)  # what a Brave that ignored the goggle would send
    sites = SiteFilter.of(None, ["docs.example.org"])
    envelope, text = parse_and_render(answer, 100_000, query="tokio", trace_id="t", server_version="0", sites=sites)
    assert "docs.example.org" not in text
    deep = next(s for s in envelope.sources if s.url == "https://blog.example.com/posts/deep-dive")
    # the passage it shares with the dropped docs page (which came first) is still its own
    assert "Install the tool, then run it once to create the configuration file." in deep.snippets
    assert [p.url for p in envelope.places] == ["https://pastelaria.example.pt", "https://tasca-teste.example.pt"]
    assert envelope.meta.site_filter is not None and envelope.meta.site_filter.dropped == 1  # one page, twice


@pytest.mark.parametrize(
    ("page", "link"),
    [
        ("https://bücher.example/a", "https://xn--bcher-kva.example./b"),
        ("https://docs.example.com./guide", "https://DOCS.example.com/api"),
    ],
    ids=["international-name", "trailing-dot"],
)
def test_one_reading_of_a_host_for_site_filters_same_site_links_and_source_labels(page: str, link: str) -> None:
    """One host spelled two ways (an international name in Unicode or punycode, a fully qualified name's trailing
    dot) is one site for a ``sites`` filter, read_url's ``same_site`` links and the source label alike."""
    site_filter = SiteFilter.of([host(page)], None)
    assert site_filter is not None and site_filter.keeps(link)
    assert same_site(link, page)
    assert site_of(link) == site_of(page) == host(link).lower().rstrip(".")
