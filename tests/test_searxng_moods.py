"""SearXNG on a bad day, as public and home instances have them (issue 38): engines of one category blocked,
its bot limiter, pages that repeat page 1, a hung instance. Each mood comes from the one fake SearXNG, on the
fake clock; what a real instance showed is in the issue's closing note."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools
from brave_search_mcp.models.errors import CircuitOpen, UpstreamTimeout
from brave_search_mcp.providers.chain import FallbackChain
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.providers.searxng.results import EnginesUnavailable
from brave_search_mcp.state.memory import MemoryRecords
from brave_search_mcp.tools.boundary import ToolBoundary
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock, ParallelClock
from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.searxng.provider import BASE, make_provider
from testkit.searxng.provider import search_request as req
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def tools(
    providers: str, searx: FakeSearxng, clock: FakeClock, brave: FakeBrave | None = None, **config: Any
) -> AsyncIterator[ToolBoundary]:
    """One server process over the fakes, the SearXNG provider with its default settings unless ``config``."""
    brave = brave or FakeBrave(rate_per_second=1000)
    settings = make_settings(providers=providers, searxng_url=BASE)
    if "brave" not in providers:
        settings = settings.model_copy(update={"api_key": None, "api_key_source": None})
    async with BraveClient(settings, transport=brave.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        provider = make_provider(searx, clock, **config)
        yield build_tools(settings, client, clock=clock, sleep=clock.sleep, others={"searxng": provider})
        await provider.aclose()


# ------------------------------------------------------------------------------------ 1. a failing category


async def test_failing_web_engines_pause_web_search_only(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.failing = {"general": "CAPTCHA"}  # blocked web engines: the commonest trouble of a real instance
    chain = FallbackChain([searxng], threshold=3, clock=clock)
    for n in range(3):
        with pytest.raises(EnginesUnavailable):
            await chain.search(req(query=f"web {n}"))
    sent = len(searx.search_requests())
    with pytest.raises(CircuitOpen) as paused:
        await chain.search(req(query="web 4"))
    assert len(searx.search_requests()) == sent  # the paused category costs no request
    assert "web search paused: answered with errors 3 times in a row; next try in 60 s" in paused.value.message
    assert paused.value.details["retry_after_ms"] == 60_000
    news = await chain.search(req(query="launch", search_type="news"))
    images = await chain.search(req(query="cats", search_type="images"))
    assert news.sections[0].results and images.sections[0].results  # the instance answers them all along
    state = chain.snapshot()["searxng"]
    assert (state["state"], state["failures"]) == ("closed", 0)
    assert state["search_types"]["web"]["state"] == "open" and "news" not in state["search_types"]


async def test_a_category_paused_in_one_process_is_paused_in_another(clock: FakeClock) -> None:
    searx, records = FakeSearxng(), MemoryRecords(clock=clock)
    searx.failing = {"general": "CAPTCHA"}
    first = FallbackChain([make_provider(searx, clock)], clock=clock, records=records)
    for n in range(3):
        with pytest.raises(EnginesUnavailable):
            await first.search(req(query=f"web {n}"))
    second = FallbackChain([make_provider(searx, clock)], clock=clock, records=records)  # another process
    sent = len(searx.search_requests())
    with pytest.raises(CircuitOpen, match="web search paused"):
        await second.search(req(query="web in the second process"))
    assert len(searx.search_requests()) == sent
    assert (await second.search(req(query="launch", search_type="news"))).provider == "searxng"
    status = await second.status()
    assert status["searxng"]["search_types"]["web"]["failures"] == 3


async def test_status_names_the_paused_category(clock: FakeClock) -> None:
    searx = FakeSearxng()
    searx.failing = {"general": "CAPTCHA"}
    async with tools("searxng", searx, clock) as boundary:
        for n in range(3):
            await boundary.call("brave_web_search", {"query": f"web {n}"})
        news = await boundary.call("brave_web_search", {"query": "launch", "search_type": "news"})
        status = await boundary.call("brave_web_search_status", {})
    assert not news.is_error
    assert "provider paused by its circuit breaker: searxng web search" in status.structured["reasons"]
    assert "provider searxng: closed, failures 0; web search open, failures 3, retried in 60 s" in status.text


# ------------------------------------------------------------------------------------ 2. the bot limiter


async def test_eight_searches_in_a_row_under_the_stock_limiter_all_answer(clock: FakeClock) -> None:
    searx = FakeSearxng(results_per_page=4)  # like the measured instance's stubs: 3 pages for 10 results
    searx.enable_limiter(clock=clock)
    async with tools("searxng", searx, clock) as boundary:
        outcomes = [await boundary.call("brave_web_search", {"query": f"search {n}"}) for n in range(8)]
        status = await boundary.call("brave_web_search_status", {})
    assert [o.is_error for o in outcomes] == [False] * 8
    assert [o.structured["meta"]["returned"] for o in outcomes] == [10] * 8
    statuses = [r.status for r in searx.search_requests()]
    assert statuses.count(429) == 1 and len(statuses) == 25  # 24 pages and the one the limiter refused
    assert [o.structured["meta"]["attempts"] for o in outcomes] == [3, 3, 3, 3, 3, 4, 3, 3]  # the 429 is counted
    assert status.structured["providers"]["searxng"]["state"] == "closed"
    assert status.structured["providers"]["searxng"]["failures"] == 0
    assert status.structured["status"] == "ok"


async def test_a_429_never_pauses_searxng(clock: FakeClock) -> None:
    searx = FakeSearxng()
    searx.fail_next(429, 100)
    async with tools("searxng", searx, clock) as boundary:
        outcomes = [await boundary.call("brave_web_search", {"query": f"q{n}"}) for n in range(5)]
        status = await boundary.call("brave_web_search_status", {})
    errors = [o.structured["error"] for o in outcomes]
    assert {e["code"] for e in errors} == {"RATE_LIMITED"}  # never "paused after 3 failed calls"
    assert all(e["details"]["retry_after_ms"] > 0 for e in errors)
    assert status.structured["providers"]["searxng"]["failures"] == 0


# ------------------------------------------------------------------------------------ 3. pages that repeat


async def test_a_repeating_video_search_stops_at_the_first_page_that_adds_nothing(clock: FakeClock) -> None:
    searx = FakeSearxng(results_per_page=2)  # a video engine that answers its first two videos for every page
    searx.repeat_first_page = True
    async with tools("searxng", searx, clock) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "talks", "search_type": "videos"})
        later = await boundary.call("brave_web_search", {"query": "talks", "search_type": "videos", "offset": 1})
    assert len(searx.search_requests()) <= 3 and searx.pages_asked() == [1, 2]
    meta = outcome.structured["meta"]
    assert (meta["returned"], meta["has_more"]) == (2, False)  # the end of the list, not "more available"
    codes = [w["code"] for w in outcome.structured.get("warnings", [])]
    assert "OFFSET_CAPPED" not in codes and "DEDUPLICATED" not in codes
    assert later.structured["error"]["code"] == "NO_RESULTS" and "offset 0" in later.text


# ------------------------------------------------------------------------------------ 4. a hung instance


async def test_a_hung_instance_ends_the_call_within_the_setting(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.hanging = True  # kill -STOP: the request is taken and never answered
    started = clock()
    with pytest.raises(UpstreamTimeout) as caught:
        await searxng.search(req(), deadline=started + 60)
    assert clock() - started == pytest.approx(8.0)  # the default: a chain has Brave's answer within ~10 s
    assert len(searx.search_requests()) == 1  # a timeout is not tried again: the instance is hung
    assert "BRAVE_SEARCH_SEARXNG_TIMEOUT_SECONDS" in caught.value.message


async def test_a_searxng_brave_chain_answers_from_brave_soon_and_the_breaker_opens(clock: FakeClock) -> None:
    searx = FakeSearxng()
    searx.hanging = True
    async with tools("searxng,brave", searx, clock) as boundary:
        times = []
        for n in range(4):
            started = clock()
            outcome = await boundary.call("brave_web_search", {"query": f"q{n}"})
            times.append(clock() - started)
            assert outcome.structured["meta"]["provider"] == "brave", outcome.text
        status = await boundary.call("brave_web_search_status", {})
    assert max(times) <= 12.0 and times[:3] == [pytest.approx(8.0)] * 3
    assert times[3] < 1.0  # three timeouts opened the breaker: the fourth call goes straight to Brave
    assert len(searx.search_requests()) == 3
    assert status.structured["providers"]["searxng"]["state"] == "open"


async def test_the_timeout_is_a_setting(clock: FakeClock) -> None:
    searx = FakeSearxng()
    searx.hanging = True
    provider = make_provider(searx, clock, timeout=3.0)
    with pytest.raises(UpstreamTimeout, match="within 3 s"):
        await provider.search(req())
    assert clock() == pytest.approx(1003.0)
    await provider.aclose()


async def test_a_failure_is_shared_before_the_next_provider_is_asked(clock: FakeClock) -> None:
    searx, records = FakeSearxng(), MemoryRecords(clock=clock)
    searx.hanging = True
    seen: list[Any] = []

    class Backup:
        name = "brave"

        def supports(self, search_type: str) -> bool:
            return True

        async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
            seen.append(await records.get("breaker:searxng"))  # what other processes see meanwhile
            return ProviderPage("brave", [])

        async def aclose(self) -> None:
            return None

    chain = FallbackChain([make_provider(searx, clock), Backup()], clock=clock, records=records)
    await chain.search(req())
    assert seen[0]["failures"] == 1 and seen[0]["last_error"].startswith("TIMEOUT")


async def test_a_hung_real_socket_times_out_and_the_instance_comes_back() -> None:
    with FakeSearxngServer(FakeSearxng()) as server:
        server.fake.hanging = True
        provider = SearxngProvider(SearxngConfig(server.base_url, timeout=0.3))  # real time: a real socket
        with pytest.raises(UpstreamTimeout):
            await provider.search(req())
        server.fake.hanging = False
        page = await provider.search(req(query="back again"))
        await provider.aclose()
    assert page.sections[0].results


async def test_status_probes_brave_and_a_hung_instance_at_once_each_within_its_bound() -> None:
    clock, searx = ParallelClock(), FakeSearxng()
    searx.hanging = True
    brave = FakeBrave(rate_per_second=1000)
    settings = make_settings(providers="brave,searxng", searxng_url=BASE)
    transport = brave.mock_transport(latency=1.0, sleep=clock.sleep)  # each of Brave's probes takes 1 s
    async with clock.running(), BraveClient(settings, transport=transport, clock=clock, sleep=clock.sleep) as client:
        provider = make_provider(searx, clock)
        boundary = build_tools(settings, client, clock=clock, sleep=clock.sleep, others={"searxng": provider})
        started = clock()
        status = await boundary.call("brave_web_search_status", {"probe_connectivity": True})
        took = clock() - started
        await provider.aclose()
    probes = {p.get("search_type") or p["provider"]: p for p in status.structured["probe"]}
    brave_probes = [p for key, p in probes.items() if key != "searxng"]
    assert len(brave_probes) >= 2 and all(p["ok"] for p in brave_probes)
    assert probes["searxng"]["code"] == "TIMEOUT"
    assert probes["searxng"]["message"] == "SearXNG did not answer within 8 s."  # not 7.99999 s
    assert took == pytest.approx(8.0, abs=0.5)  # the slowest bound, not Brave's seconds plus the instance's 8
