"""Brave with a free safety net: SearXNG answers in the same call when Brave fails, the breaker spares a dead
Brave, and SearXNG alone serves every face without any Brave key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from brave_search_mcp import BraveSearch
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools, other_providers
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.tools.boundary import ToolBoundary
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio


def _boundary(
    brave: FakeBrave, searxng: FakeSearxng, clock: FakeClock, client: BraveClient, **overrides: object
) -> ToolBoundary:
    settings = make_settings(providers="brave,searxng", searxng_url="http://searxng.test", retries=1, **overrides)
    provider = SearxngProvider(
        SearxngConfig("http://searxng.test"), transport=searxng.mock_transport(), clock=clock, sleep=clock.sleep
    )
    others = {"searxng": provider}
    return build_tools(settings, client, clock=clock, sleep=clock.sleep, others=others)


async def test_brave_down_searxng_answers_in_the_same_call_then_the_breaker_spares_brave() -> None:
    clock, brave, searxng = FakeClock(), FakeBrave(rate_per_second=1000), FakeSearxng()
    settings = make_settings(retries=1)
    async with BraveClient(settings, transport=brave.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = _boundary(brave, searxng, clock, client)
        brave.inject("503", times=100)
        first = await tools.call("brave_web_search", {"query": "python asyncio"})
        assert not first.is_error, first.text
        assert first.structured["meta"]["provider"] == "searxng"
        fallback = [w for w in first.structured["warnings"] if w["code"] == "FALLBACK"]
        assert fallback and "brave" in fallback[0]["message"] and "UPSTREAM_ERROR" in fallback[0]["message"]
        assert first.structured["sections"][0]["results"][0]["provider"] == "searxng"
        for n in range(2):  # three failed calls in all open Brave's breaker (threshold 3)
            await tools.call("brave_web_search", {"query": f"more {n}"})
        sent = brave.hits()
        paused = await tools.call("brave_web_search", {"query": "while brave is paused"})
        assert brave.hits() == sent  # an open breaker sends nothing to the dead provider
        assert paused.structured["meta"]["provider"] == "searxng"
        status = await tools.call("brave_web_search_status", {})
        assert status.structured["providers"]["brave"]["state"] == "open"
        assert "retry_in_seconds" in status.structured["providers"]["brave"]
        brave.reset()  # Brave recovers; after the cool-down one trial goes through and closes the breaker
        clock.now += 61
        recovered = await tools.call("brave_web_search", {"query": "after the cool-down"})
        assert recovered.structured["meta"]["provider"] == "brave"
        assert brave.hits() == 1
        closed = await tools.call("brave_web_search_status", {})
        assert closed.structured["providers"]["brave"]["state"] == "closed"


async def test_bad_input_and_no_results_never_fall_back() -> None:
    clock, brave, searxng = FakeClock(), FakeBrave(rate_per_second=1000), FakeSearxng()
    settings = make_settings(retries=1)
    async with BraveClient(settings, transport=brave.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = _boundary(brave, searxng, clock, client)
        brave.no_results_for.add("nothing at all")
        empty = await tools.call("brave_web_search", {"query": "nothing at all"})
        bad = await tools.call("brave_web_search", {"query": ""})
    assert empty.structured["error"]["code"] == "NO_RESULTS"
    assert bad.structured["error"]["code"] == "INVALID_ARGUMENT"
    assert searxng.search_requests() == []


def _searxng_only(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAVE", "SEARXNG"))}
    env.update(BRAVE_SEARCH_PROVIDERS="searxng", SEARXNG_URL=url)
    return env


def test_cli_with_searxng_and_no_brave_key(searxng_server: FakeSearxngServer) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp", "search", "rust ownership", "--json"],
        env=_searxng_only(searxng_server.base_url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["meta"]["provider"] == "searxng" and envelope["sections"][0]["results"]


async def test_library_and_mcp_with_searxng_and_no_brave_key(searxng_server: FakeSearxngServer) -> None:
    settings = Settings.from_env(_searxng_only(searxng_server.base_url))
    assert not settings.has_key and set(other_providers(settings)) == {"searxng"}
    async with BraveSearch(settings=settings) as brave:
        result = await brave.web_search("rust ownership")
    assert result.meta.provider == "searxng" and result.sections
    async with Client(build_server(settings)) as mcp:
        names = [tool.name for tool in (await mcp.list_tools()).tools]
        found = await mcp.call_tool("brave_web_search", {"query": "rust ownership", "search_type": "news"})
        hidden = await mcp.call_tool("brave_answer", {"question": "why?"})
    assert names == ["brave_web_search", "read_url", "brave_web_search_help", "brave_web_search_status"]
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["meta"]["provider"] == "searxng"
    assert hidden.is_error  # a Brave-only tool is not served without Brave


def test_searxng_without_its_url_fails_at_start_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="SEARXNG_URL"):
        Settings.from_env({"BRAVE_SEARCH_PROVIDERS": "brave,searxng"})
    with pytest.raises(ValueError, match="BRAVE_SEARCH_PROVIDERS"):
        Settings.from_env({"BRAVE_SEARCH_PROVIDERS": "bing"})


async def test_a_breaker_opened_in_one_process_is_seen_by_another(tmp_path: Path) -> None:
    """Breaker states live in the shared store: a second process does not re-discover a dead Brave."""
    from brave_search_mcp.compose import open_client

    brave, searxng = FakeBrave(rate_per_second=1000), FakeSearxng()
    brave.inject("503", times=1000)
    settings = make_settings(
        providers="brave,searxng", searxng_url="http://searxng.test", retries=0, state=f"sqlite://{tmp_path / 's.db'}"
    )

    def others() -> dict[str, SearxngProvider]:
        return {"searxng": SearxngProvider(SearxngConfig("http://searxng.test"), transport=searxng.mock_transport())}

    async with open_client(settings, transport=brave.mock_transport()) as first:
        tools = build_tools(settings, first, others=others())
        for n in range(3):
            await tools.call("brave_web_search", {"query": f"first process {n}"})
    sent = brave.hits()
    async with open_client(settings, transport=brave.mock_transport()) as second:
        tools = build_tools(settings, second, others=others())
        answer = await tools.call("brave_web_search", {"query": "second process"})
        status = await tools.call("brave_web_search_status", {})
    assert answer.structured["meta"]["provider"] == "searxng"
    assert brave.hits() == sent  # the second process skipped the dead Brave at once
    assert status.structured["providers"]["brave"]["state"] == "open"
