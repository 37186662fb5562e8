"""Paging through a SearXNG instance: our offset is a window of the instance's own list, whose pages have the
instance's size (not our count); instance pages are cached, shared by every process on the state backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from brave_search_mcp.models.errors import NoResults, UpstreamError
from brave_search_mcp.providers.searxng.client import SearxngProvider
from brave_search_mcp.providers.searxng.results import EnginesUnavailable, Window, window_page
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.memory import MemoryCache
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng
from testkit.searxng.provider import make_provider
from testkit.searxng.provider import search_request as req

pytestmark = pytest.mark.anyio


def numbers(urls: list[str]) -> list[int]:
    """The instance's own result numbers (the fake puts n in each URL)."""
    return [int(url.rsplit("/", 1)[1]) for url in urls]


async def test_every_result_is_reached_once_with_its_true_rank(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    seen: list[str] = []
    for offset in range(9):
        page = await searxng.search(req(query="many", offset=offset))
        results = page.sections[0].results
        assert [r.rank for r in results] == list(range(offset * 10 + 1, offset * 10 + 1 + len(results)))
        seen += [r.url for r in results]
    assert sorted(numbers(seen)) == list(range(1, 82))  # 3 pages of 27: none skipped, none twice
    assert searx.pages_asked() == [1, 2, 3, 4]  # each instance page once (4: the empty one that ends the list)


async def test_offset_one_shows_results_eleven_to_twenty_from_the_first_instance_page(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.unstable_order = False  # so the instance's order is its numbering
    page = await searxng.search(req(query="many", offset=1))
    assert sorted(numbers([r.url for r in page.sections[0].results])) == list(range(11, 21))
    assert searx.pages_asked() == [1]  # not pageno=2, which starts at the instance's result 28
    straddling = await searxng.search(req(query="many", offset=2, count=10))
    assert sorted(numbers([r.url for r in straddling.sections[0].results])) == list(range(21, 31))
    assert searx.pages_asked() == [1, 2]
    assert straddling.attempts == 1 and straddling.cached is False  # page 1 came from the cache
    again = await searxng.search(req(query="many", offset=2, count=10))
    assert (again.cached, again.attempts, searx.pages_asked()) == (True, 0, [1, 2])


async def test_paging_stays_consistent_although_the_instance_reorders_equal_scores(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    # The fake, like a real instance, swaps equal-score results on every other identical request: results 5
    # and 6 of page 1 tie. Reading page 1 again for offset 1 would show one of them twice and lose the other.
    first = await searxng.search(req(query="tie", count=5, offset=0))
    second = await searxng.search(req(query="tie", count=5, offset=1))
    urls = [r.url for r in first.sections[0].results + second.sections[0].results]
    assert len(set(urls)) == 10 and sorted(numbers(urls)) == list(range(1, 11))


async def test_the_last_page_says_no_more_and_past_the_end_is_no_results(searxng: SearxngProvider) -> None:
    last = await searxng.search(req(query="many", offset=8))
    assert numbers([r.url for r in last.sections[0].results]) == [81]
    assert last.more_available is False and last.sections[0].section_limit_reached is False
    with pytest.raises(NoResults) as caught:
        await searxng.search(req(query="many", offset=9))
    assert "past the instance's 81 results" in caught.value.message


async def test_image_offset_pages_through_searxng_images(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.unstable_order = False
    page = await searxng.search(req(search_type="images", offset=3, count=10))
    assert [r.rank for r in page.sections[0].results] == list(range(31, 41))
    assert sorted(numbers([r.url.removesuffix(".jpg") for r in page.sections[0].results if r.image_url])) == list(
        range(31, 41)
    )
    assert {"OFFSET_IGNORED", "SAFE_SEARCH_ADJUSTED"} <= page.superseded  # Brave's image rules are not SearXNG's
    assert searx.search_requests()[-1].params["categories"] == "images"


async def test_far_offsets_read_at_most_max_pages(clock: FakeClock) -> None:
    searx = FakeSearxng(results_per_page=5, pages=100)
    provider = make_provider(searx, clock, max_pages=10)
    partial = await provider.search(req(query="small pages", offset=3, count=15))  # results 46-60 of 50 read
    assert [r.rank for r in partial.sections[0].results] == [46, 47, 48, 49, 50]
    assert [w.code for w in partial.warnings] == ["OFFSET_CAPPED"] and "first 10 pages" in partial.warnings[0].message
    with pytest.raises(NoResults) as caught:
        await provider.search(req(query="small pages", offset=4, count=15))
    assert "past the 50 results of the instance's first 10 pages" in caught.value.message
    assert len(searx.search_requests()) == 10  # the second search read every page from the cache
    await provider.aclose()


async def test_a_later_page_failing_keeps_what_the_earlier_ones_hold(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    await searxng.search(req(query="many"))
    searx.fail_next(503, 3)
    page = await searxng.search(req(query="many", offset=2))
    assert [r.rank for r in page.sections[0].results] == [21, 22, 23, 24, 25, 26, 27]
    assert [w.code for w in page.warnings] == ["ENGINES_UNRESPONSIVE"] and "page 2" in page.warnings[0].message
    searx.fail_next(503, 3)
    with pytest.raises(UpstreamError):  # nothing of our page on the pages that answered: the failure is not hidden
        await searxng.search(req(query="many", offset=3))


async def test_failures_are_not_cached(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.all_engines_fail = True
    with pytest.raises(EnginesUnavailable):
        await searxng.search(req(query="flaky"))
    searx.all_engines_fail = False
    page = await searxng.search(req(query="flaky"))
    assert page.cached is False and len(searx.search_requests()) == 2


async def test_pages_expire_after_the_ttl_and_sooner_with_a_time_range(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    await searxng.search(req(query="ttl"))
    await searxng.search(req(query="ttl", freshness="pd"))
    clock.now += 61
    assert (await searxng.search(req(query="ttl"))).cached is True
    assert (await searxng.search(req(query="ttl", freshness="pd"))).cached is False  # a minute at most
    clock.now += 300
    assert (await searxng.search(req(query="ttl"))).cached is False


async def test_processes_on_one_state_backend_share_the_instance_pages(tmp_path: Path, clock: FakeClock) -> None:
    searx = FakeSearxng()
    first_state = await open_state(f"sqlite://{tmp_path / 'state.db'}", cache_max_entries=64)
    second_state = await open_state(f"sqlite://{tmp_path / 'state.db'}", cache_max_entries=64)
    first = make_provider(searx, clock, cache=first_state.cache)
    second = make_provider(searx, clock, cache=second_state.cache)
    await first.search(req(query="shared", offset=1))
    page = await second.search(req(query="shared", offset=2))
    assert searx.pages_asked() == [1, 2]  # the second "process" read page 1 from the shared store
    assert [r.rank for r in page.sections[0].results] == list(range(21, 31))
    again = await second.search(req(query="shared", offset=1))
    assert (again.cached, again.attempts) == (True, 0)
    for item in (first, second, first_state, second_state):
        await item.aclose()


async def test_another_instance_does_not_share_pages(clock: FakeClock) -> None:
    searx, cache = FakeSearxng(), MemoryCache(16, clock=clock)
    one = make_provider(searx, clock, cache=cache)
    other = make_provider(searx, clock, cache=cache, base_url="http://other.test")
    await one.search(req(query="x"))
    await other.search(req(query="x"))
    assert searx.pages_asked() == [1, 1]
    await one.aclose()
    await other.aclose()


def test_an_engine_failing_on_two_pages_is_named_once_with_its_first_reason() -> None:
    window = Window(offset=0, count=10)
    hit = {"url": "https://a.example.org/1", "title": "a"}
    window.add({"results": [hit], "unresponsive_engines": [["stubb", "HTTP error"]]}, "web")
    more = {"url": "https://a.example.org/2", "title": "b"}
    window.add({"results": [more], "unresponsive_engines": [["stubb", "Suspended: HTTP error"]]}, "web")
    page = window_page(window, req(), [])
    assert [w.message for w in page.warnings] == [
        "SearXNG engines did not answer: stubb (HTTP error); results may be fewer."
    ]


async def test_a_later_page_that_repeats_ends_the_list(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.repeat_first_page = True
    page = await searxng.search(req(query="many", count=20, offset=1))  # results 21-40 of a 27-result list
    assert [r.rank for r in page.sections[0].results] == list(range(21, 28))
    assert page.more_available is False and searx.pages_asked() == [1, 2]
    assert [w.code for w in page.warnings] == []  # no OFFSET_CAPPED, no DEDUPLICATED for the repeated page
    with pytest.raises(NoResults) as caught:
        await searxng.search(req(query="many", count=20, offset=2))
    assert caught.value.details["last_offset"] == 1


async def test_a_later_page_refused_by_the_rate_limit_says_so_not_that_engines_failed(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    await searxng.search(req(query="many"))
    searx.fail_next(429)  # the bot limiter refuses page 2; its slower pace leaves no start before the deadline
    page = await searxng.search(req(query="many", offset=2), deadline=clock() + 10)
    assert [r.rank for r in page.sections[0].results] == [21, 22, 23, 24, 25, 26, 27]
    assert [w.code for w in page.warnings] == ["PAGE_RATE_LIMITED"]
    assert page.warnings[0].message == (
        "SearXNG's page 2 was refused by the rate limit (RATE_LIMITED); the results shown come from the pages "
        "before it; retry in 21 s for the rest."
    )
