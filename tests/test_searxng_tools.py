"""SearXNG as the agent meets it through the tools: errors name the provider that failed and stay honest under
the breaker, nothing the caller set is dropped silently, Brave's own rules stay Brave's, the text shows what
SearXNG knows, status reads the shared breakers and probes the instance, fallback works in both directions."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools, open_client, open_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.cli import startup_line
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.searxng.provider import make_provider
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio
URL = "http://searxng.test"


@asynccontextmanager
async def tools(
    providers: str, searxng: FakeSearxng, brave: FakeBrave | None = None, base_url: str = URL, **overrides: Any
) -> AsyncIterator[ToolBoundary]:
    """The tool boundary over the fakes, as one process of the server would build it (the instance at
    ``base_url``)."""
    brave = brave or FakeBrave(rate_per_second=1000)
    settings = make_settings(providers=providers, searxng_url=URL, retries=0, **overrides)
    if "brave" not in providers:
        settings = settings.model_copy(update={"api_key": None, "api_key_source": None})
    clock = FakeClock()
    async with BraveClient(settings, transport=brave.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        provider = make_provider(searxng, clock, base_url=base_url, retries=0)
        yield build_tools(settings, client, clock=clock, sleep=clock.sleep, others={"searxng": provider})
        await provider.aclose()


def codes(outcome: ToolOutcome) -> list[str]:
    return [w["code"] for w in outcome.structured.get("warnings", [])]


async def test_a_misconfigured_instance_is_named_on_every_call_not_paused() -> None:
    searxng = FakeSearxng()
    searxng.json_enabled = False
    async with tools("searxng", searxng) as boundary:
        outcomes = [await boundary.call("brave_web_search", {"query": f"call {n}"}) for n in range(5)]
    for outcome in outcomes:  # the 4th and 5th too: the breaker does not turn it into "paused, retry in 60 s"
        error = outcome.structured["error"]
        assert (error["code"], error["retryable"]) == ("PROVIDER_MISCONFIGURED", False)
        assert "search.formats" in error["message"]
        assert outcome.structured["meta"]["provider"] == "searxng"


async def test_status_names_the_misconfiguration_in_this_process_and_the_next(tmp_path: Path) -> None:
    searxng = FakeSearxng()
    searxng.json_enabled = False
    settings = Settings(providers=("searxng",), searxng_url=URL, state=f"sqlite://{tmp_path / 's.db'}")
    search: tuple[str, dict[str, Any]] = ("brave_web_search", {"query": "q"})
    status_call: tuple[str, dict[str, Any]] = ("brave_web_search_status", {})
    processes = [[search, status_call], [status_call]]
    for calls in processes:
        async with open_client(settings) as client:  # two processes on one state backend
            provider = SearxngProvider(SearxngConfig(URL), transport=searxng.mock_transport())
            boundary = build_tools(settings, client, others={"searxng": provider})
            status = [await boundary.call(name, args) for name, args in calls][-1]
            await provider.aclose()
        searxng_state = status.structured["providers"]["searxng"]
        assert searxng_state["misconfigured"].startswith("PROVIDER_MISCONFIGURED: SearXNG refused JSON output")
        assert searxng_state["state"] == "closed"  # named, not paused
        line = next(line for line in status.text.splitlines() if line.startswith("provider searxng"))
        assert "misconfigured: PROVIDER_MISCONFIGURED" in line and "search.formats" in line
    searxng.json_enabled = True
    async with open_client(settings) as client:  # fixed: the next answer clears it
        provider = SearxngProvider(SearxngConfig(URL), transport=searxng.mock_transport())
        boundary = build_tools(settings, client, others={"searxng": provider})
        await boundary.call("brave_web_search", {"query": "fixed"})
        status = await boundary.call("brave_web_search_status", {})
        await provider.aclose()
    assert "misconfigured" not in status.structured["providers"]["searxng"]


async def test_a_new_process_still_hears_the_cause(tmp_path: Path) -> None:
    searxng = FakeSearxng()
    searxng.json_enabled = False
    settings = Settings(
        providers=("searxng",), searxng_url=URL, state=f"sqlite://{tmp_path / 's.db'}", breaker_threshold=1
    )
    for _ in range(2):  # two processes on one state backend
        async with open_client(settings) as client:
            provider = SearxngProvider(SearxngConfig(URL), transport=searxng.mock_transport())
            outcome = await build_tools(settings, client, others={"searxng": provider}).call(
                "brave_web_search", {"query": "q"}
            )
            await provider.aclose()
        assert outcome.structured["error"]["code"] == "PROVIDER_MISCONFIGURED"


async def test_searxng_errors_name_searxng_in_meta_and_advice() -> None:
    searxng = FakeSearxng()
    searxng.fail_next(503, 5)
    async with tools("searxng", searxng) as boundary:
        failed = await boundary.call("brave_web_search", {"query": "down"})
        invalid = await boundary.call("brave_web_search", {"query": "   "})
    assert failed.structured["meta"]["provider"] == "searxng"
    assert failed.structured["error"]["code"] == "UPSTREAM_ERROR"
    assert "SearXNG answered with an error" in failed.text and "Brave" not in failed.text
    assert invalid.structured["meta"]["provider"] == "searxng"  # the only provider configured


async def test_summary_with_searxng_says_summaries_need_brave() -> None:
    async with tools("searxng", FakeSearxng()) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "rust", "summary": True})
    notes = [w["message"] for w in outcome.structured["warnings"] if w["code"] == "SUMMARY_NOT_AVAILABLE"]
    assert notes == ["searxng answered this search; summaries come only from Brave (no summarizer key)."]


def test_the_start_line_names_the_providers_and_asks_no_brave_key() -> None:
    alone = startup_line(Settings(providers=("searxng",), searxng_url=URL))
    assert "no Brave key needed" in alone and "providers: searxng" in alone and "BRAVE_API_KEY" not in alone
    both = startup_line(Settings(providers=("searxng", "brave"), searxng_url=URL))
    assert "set BRAVE_API_KEY" in both and "providers: searxng, brave" in both


async def test_options_searxng_cannot_send_are_named() -> None:
    async with tools("searxng", FakeSearxng()) as boundary:
        outcome = await boundary.call(
            "brave_web_search", {"query": "rust", "goggles": ["https://example.org/g"], "units": "metric"}
        )
    assert "SearXNG has no goggles, units; they were not sent." in [
        w["message"] for w in outcome.structured["warnings"]
    ]


async def test_brave_s_image_rules_are_not_applied_to_searxng() -> None:
    searxng = FakeSearxng()
    searxng.unstable_order = False
    async with tools("searxng", searxng) as boundary:
        default = await boundary.call("brave_web_search", {"query": "cats", "search_type": "images"})
        moderate = await boundary.call(
            "brave_web_search", {"query": "cats", "search_type": "images", "safe_search": "moderate", "offset": 1}
        )
    assert [r.engine_safesearch for r in searxng.search_requests()] == [2, 1]  # Brave's default; then as asked
    assert "SAFE_SEARCH_ADJUSTED" not in codes(moderate) and "OFFSET_IGNORED" not in codes(moderate)
    assert [r["rank"] for r in moderate.structured["sections"][0]["results"]][:2] == [11, 12]
    assert default.structured["meta"]["provider"] == "searxng"


async def test_videos_are_served_by_searxng() -> None:
    async with tools("searxng", FakeSearxng()) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "talks", "search_type": "videos", "max_results": 2})
    assert not outcome.is_error, outcome.text
    assert outcome.structured["sections"][0]["key"] == "videos"
    assert "3:20" in outcome.text


async def test_text_shows_news_dates_and_answers_without_empty_lines() -> None:
    searxng = FakeSearxng(results_per_page=2, pages=1)
    searxng.unstable_order = False
    searxng.answers = [{"answer": "42", "url": None, "engine": "plugin: calculator"}]
    async with tools("searxng", searxng) as boundary:
        news = await boundary.call("brave_web_search", {"query": "launch", "search_type": "news", "max_results": 2})
        web = await boundary.call("brave_web_search", {"query": "6 * 7", "max_results": 3})
    assert "1. launch – result 1 · 2 days ago" in news.text.split("\n")  # an age, as Brave says it
    first = news.structured["sections"][0]["results"][0]
    assert (first["age"], first["published_date"]) == ("2 days ago", "2025-03-14T09:30:00+00:00")
    assert web.text.split("\n")[:5] == [
        '2 web results for "6 * 7" (offset 0).',
        "## Answers",
        "- Answer",
        "42",
        "## Web results",
    ]
    assert "" not in web.text.split("\n")


async def test_searxng_failing_before_brave_is_named_and_no_warning_repeats() -> None:
    searxng = FakeSearxng()
    searxng.fail_next(500, 5)
    async with tools("searxng,brave", searxng) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "hello world"})
    assert outcome.structured["meta"]["provider"] == "brave"
    fallback = [w["message"] for w in outcome.structured["warnings"] if w["code"] == "FALLBACK"]
    assert len(fallback) == 1 and fallback[0].startswith("searxng UPSTREAM_ERROR")
    warnings = [(w["code"], w["message"]) for w in outcome.structured["warnings"]]
    assert Counter(warnings).most_common(1)[0][1] == 1


async def test_status_reads_the_shared_breaker_and_probes_searxng(tmp_path: Path) -> None:
    searxng = FakeSearxng()
    searxng.fail_next(503, 3)
    settings = Settings(providers=("searxng",), searxng_url=URL, state=f"sqlite://{tmp_path / 's.db'}")

    async def one_process(*calls: tuple[str, dict[str, Any]]) -> list[ToolOutcome]:
        async with open_client(settings) as client:
            provider = SearxngProvider(SearxngConfig(URL, retries=0), transport=searxng.mock_transport())
            boundary = build_tools(settings, client, others={"searxng": provider})
            outcomes = [await boundary.call(name, args) for name, args in calls]
            await provider.aclose()
            return outcomes

    await one_process(*[("brave_web_search", {"query": f"q{n}"}) for n in range(3)])
    (status,) = await one_process(("brave_web_search_status", {}))
    assert status.structured["providers"]["searxng"]["state"] == "open"  # what the other process learned
    assert status.structured["status"] == "degraded"
    assert "provider searxng: open, failures 3" in status.text
    searxng.json_enabled = False
    (probed,) = await one_process(("brave_web_search_status", {"probe_connectivity": True}))
    probe = probed.structured["probe"]
    assert [(p["provider"], p["ok"], p["code"]) for p in probe] == [("searxng", False, "PROVIDER_MISCONFIGURED")]
    assert "probe failed for searxng" in probed.structured["reasons"]
    assert "probe searxng: PROVIDER_MISCONFIGURED" in probed.text


async def test_status_without_brave_says_so_and_shows_none_of_its_limits() -> None:
    """SearXNG alone: status reports the instance, not Brave's rate, month, limits, plan, throttle or counters."""
    async with tools("searxng", FakeSearxng()) as boundary:
        await boundary.call("brave_web_search", {"query": "free search"})
        await boundary.call("brave_web_search", {"query": "free search"})  # the instance's page from the cache
        await boundary.call("brave_web_search", {"query": "news", "search_type": "news"})
        brave = boundary.ports.client.limits.search.limiter  # a pause Brave demanded of a key this mode never uses
        await brave.change(lambda plan: plan.blocked(brave.clock() + 30))
        status = await boundary.call("brave_web_search_status", {"verbose": True, "include_limits": True})
    lines = status.text.splitlines()
    assert lines[0].startswith("status: ok")
    assert "brave: not used (BRAVE_SEARCH_PROVIDERS=searxng); no Brave key needed" in lines
    assert not [line for line in lines if line.startswith(("rate in force", "requests this month", "brave limits"))]
    assert not [line for line in lines if line.startswith("plan seen")]
    assert "provider searxng: closed, failures 0" in lines
    assert "cache: 2 entries in this process, ttl 300 s, 1 hits, 2 misses (searxng pages)" in lines  # not Brave's
    assert f"searxng: {URL}/search; at most 8 s a call; pace 2/s, 2 at once" in lines
    counters = [line for line in lines if line.startswith("counter")]
    assert counters == [  # SearXNG's own, per search type: no Brave endpoint, no "counter web: 0"
        "counter searxng web: 1 requests, 0 errors",
        "counter searxng news: 1 requests, 0 errors",
        "counter searxng images: 0 requests, 0 errors",
        "counter searxng videos: 0 requests, 0 errors",
    ]
    report = status.structured
    assert report["counters"]["searxng web"] == {"requests": 1, "errors": 0, "cache_hits": 1, "by_code": {}}
    assert not {"throttle", "rate_limit", "plan", "cache"} & set(report)  # Brave's blocks
    assert not {"base_url", "rate_limit_per_second", "burst", "monthly_requests", "timeout_seconds"} & set(
        report["settings"]
    )
    assert report["settings"]["searxng_timeout_seconds"] == 8.0
    assert report["limits"]["query"] == {"max_chars": 2000}  # SearXNG's, not Brave's 400 characters / 50 words
    assert report["limits"]["search_types"]["images"]["offset"] == {"min": 0, "max": 9}  # it pages images
    assert report["meta"]["provider"] == "searxng" and report["settings"]["providers"] == ["searxng"]
    assert not [line for line in lines if "brave" in line.lower() and not line.startswith("brave: not used")]


async def test_every_process_reuses_the_instance_pages_from_the_shared_state(tmp_path: Path) -> None:
    with FakeSearxngServer(FakeSearxng()) as server:
        settings = Settings(providers=("searxng",), searxng_url=server.base_url, state=f"sqlite://{tmp_path / 's'}")
        found = []
        for _ in range(2):  # two processes, one after the other
            async with open_tools(settings) as boundary:
                found.append(await boundary.call("brave_web_search", {"query": "shared pages", "offset": 1}))
        asked = server.fake.pages_asked()
    assert asked == [1]  # the second process read the instance's page 1 from the shared store
    assert [o.structured["meta"]["cached"] for o in found] == [False, True]
    assert found[0].structured["sections"] == found[1].structured["sections"]


# ------------------------------------------------------------------------------------ debug controls (item 5)


async def test_disable_cache_asks_the_instance_afresh_and_the_request_url_is_the_instance_s() -> None:
    searxng = FakeSearxng()
    debug = {"query": "fresh", "debug": True, "disable_cache": True, "include_request_url": True}
    async with tools("searxng", searxng) as boundary:
        first = await boundary.call("brave_web_search", debug)
        second = await boundary.call("brave_web_search", debug)
        cached = await boundary.call("brave_web_search", {"query": "fresh"})
    assert searxng.pages_asked() == [1, 1, 1]  # both asked the instance, and stored nothing for the plain call
    assert cached.structured["meta"]["cached"] is False
    assert second.structured["debug"]["cache_bypassed"] is True and second.structured["meta"]["cached"] is False
    assert first.structured["debug"]["request_url"] == (
        f"{URL}/search?q=fresh&format=json&categories=general&language=all&safesearch=1&pageno=1"
    )


async def test_the_request_url_shows_no_credential_and_a_base_query_is_kept() -> None:
    searxng = FakeSearxng()
    base = "http://someone:pw-not-real@searxng.test/searx/?token=tok-not-real"
    args = {"query": "q", "debug": True, "include_request_url": True}
    async with tools("searxng", searxng, base_url=base) as boundary:
        outcome = await boundary.call("brave_web_search", args)
    url = outcome.structured["debug"]["request_url"]
    assert url.startswith("http://searxng.test/searx/search?token=%5Bredacted%5D&q=q&")
    assert "pw-not-real" not in outcome.text and "tok-not-real" not in outcome.text
    sent = searxng.search_requests()[0]
    assert (sent.path, sent.url_params) == ("/searx/search", {"token": "tok-not-real"})  # not /searx/?token=…/search


# ------------------------------------------------------------------------------------ Brave's rules (item 7)


async def test_no_brave_limit_or_wording_with_searxng_alone() -> None:
    searxng = FakeSearxng()
    long_query = " ".join(f"word{n}" for n in range(120))
    async with tools("searxng", searxng) as boundary:
        long = await boundary.call("brave_web_search", {"query": long_query})
        country = await boundary.call("brave_web_search", {"query": "q", "search_language": "en", "country": "zh-hans"})
        region = await boundary.call("brave_web_search", {"query": "q", "search_language": "zh-hans", "country": "US"})
        help_text = (await boundary.call("brave_web_search_help", {})).text
    assert "QUERY_TRUNCATED" not in codes(long) and searxng.search_requests()[0].engine_query == long_query
    assert codes(country) == ["INVALID_COUNTRY"] and "2-letter" in country.structured["warnings"][0]["message"]
    assert codes(region) == ["PARAM_IGNORED"] and "zh-CN" in region.structured["warnings"][0]["message"]
    for outcome in (long, country, region):
        assert "Brave" not in outcome.text
    lowered = help_text.lower()
    assert "goggle" not in lowered and "summar" not in lowered and not re.search(r"\b400\b", lowered)
    assert '- query: {"max_chars":2000}' in help_text


async def test_brave_s_rules_still_hold_when_brave_answers_a_chain() -> None:
    long_query = " ".join(f"word{n}" for n in range(120))
    searxng = FakeSearxng()
    searxng.fail_next(503, 3)
    async with tools("searxng,brave", searxng) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": long_query})
    assert outcome.structured["meta"]["provider"] == "brave"
    assert "QUERY_TRUNCATED" in codes(outcome)  # Brave got Brave's 50 words, and says so


# ------------------------------------------------------------------------------------ smaller points (item 8)


async def test_image_offset_and_the_end_of_the_images() -> None:
    searxng = FakeSearxng(results_per_page=3, pages=1)  # an instance with three images for the query
    async with tools("searxng", searxng) as boundary:
        second = await boundary.call("brave_web_search", {"query": "cats", "search_type": "images", "offset": 1,
                                                           "max_results": 2})  # fmt: skip
        past = await boundary.call("brave_web_search", {"query": "cats", "search_type": "images", "offset": 1})
    assert second.structured["meta"]["offset"] == 1  # the page served, not Brave's 0 for images
    assert [r["rank"] for r in second.structured["sections"][0]["results"]] == [3]
    error = past.structured["error"]
    assert error["code"] == "NO_RESULTS" and error["details"]["last_offset"] == 0
    assert "OFFSET_IGNORED" not in [w["code"] for w in past.structured.get("warnings", [])]
    assert "offset 0 is the last with results" in past.text and "rephrase" not in past.text
