"""brave_summarizer, brave_web_search_help and brave_web_search_status through the MCP client, both modes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import ErrorCode, WarningCode
from brave_search_mcp.tools.help import ToolDoc
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.clock import FakeClock
from testkit.in_memory import mcp_client
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio

SUMMARIZER_PATH = "/res/v1/summarizer/search"

TOOL_MODELS = {tool.name: tool.input_model for tool in all_tools()}
TOOL_DOCS = [ToolDoc(tool.name, tool.input_model, tool.help) for tool in all_tools()]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def connect(
    fake: FakeBrave, mode: str, settings: Settings | None = None
) -> AsyncIterator[tuple[Client, FakeClock]]:
    settings = settings or make_settings()
    async with (
        mcp_client(settings, fake.mock_transport(), mode=mode) as (mcp, clock),
    ):
        yield mcp, clock


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def structured(result: CallToolResult) -> dict[str, Any]:
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


async def summarize(fake: FakeBrave, mode: str, arguments: dict[str, Any]) -> tuple[CallToolResult, FakeClock]:
    async with connect(fake, mode) as (mcp, clock):
        return await mcp.call_tool("brave_summarizer", arguments), clock


# -- brave_summarizer -------------------------------------------------------------------------


async def test_summarizer_by_query_polls_pending_then_complete_with_waits(mode: str) -> None:
    fake = FakeBrave(rate_per_second=1000, summarizer_pending_polls=2)
    result, clock = await summarize(fake, mode, {"query": "what is asyncio"})
    assert not result.is_error, text_of(result)
    env = structured(result)
    assert env["summary_text"]
    assert env["meta"]["polls"] == 3
    assert fake.hits(SUMMARIZER_PATH) == 3
    assert len(clock.sleeps) >= 2
    assert all(wait > 0 for wait in clock.sleeps)
    searches = [r for r in fake.requests if r.path.endswith("/web/search")]
    assert len(searches) == 1
    assert ("summary", "1") in searches[0].params
    assert all(name != "result_filter" for name, _ in searches[0].params)


async def test_summarizer_by_key_from_a_search(fake: FakeBrave, mode: str) -> None:
    async with connect(fake, mode) as (mcp, _):
        search = await mcp.call_tool("brave_web_search", {"query": "what is rust", "summary": True})
        key = structured(search)["summarizer_key"]
        assert key
        result = await mcp.call_tool("brave_summarizer", {"key": key})
    assert not result.is_error, text_of(result)
    sent = [r for r in fake.requests if r.path == SUMMARIZER_PATH]
    assert all(("key", key) in r.params for r in sent)


async def test_summarizer_failed_is_summary_unavailable(fake: FakeBrave, mode: str) -> None:
    fake.summary_failing.add("a summary that fails")
    result, _ = await summarize(fake, mode, {"query": "a summary that fails"})
    error = structured(result)["error"]
    assert result.is_error
    assert error["code"] == ErrorCode.SUMMARY_UNAVAILABLE
    assert error["message"].startswith("Unable to retrieve a Summarizer summary.")
    assert error["details"]["reason"] == "failed"


async def test_summarizer_deadline_ends_polling_within_budget(fake: FakeBrave, mode: str) -> None:
    fake.summary_never_ready.add("a summary never ready")
    result, clock = await summarize(fake, mode, {"query": "a summary never ready", "deadline_seconds": 5})
    error = structured(result)["error"]
    assert error["code"] == ErrorCode.SUMMARY_UNAVAILABLE
    assert error["details"]["reason"] == "deadline"
    assert error["retryable"] is True
    assert sum(clock.sleeps) <= 5
    assert 2 <= fake.hits(SUMMARIZER_PATH) < 20


async def test_summarizer_without_a_key_in_the_search_response(fake: FakeBrave, mode: str) -> None:
    fake.unsummarizable.add("no summary for this")
    result, _ = await summarize(fake, mode, {"query": "no summary for this"})
    error = structured(result)["error"]
    assert error["code"] == ErrorCode.SUMMARY_UNAVAILABLE
    assert error["details"]["reason"] == "no_key"
    assert fake.hits(SUMMARIZER_PATH) == 0


async def test_summarizer_plan_refusal_names_the_plan(fake: FakeBrave, mode: str) -> None:
    fake.inject("400_not_in_plan", path=SUMMARIZER_PATH)
    result, _ = await summarize(fake, mode, {"query": "what is mcp"})
    error = structured(result)["error"]
    assert (error["code"], error["retryable"]) == (ErrorCode.NOT_IN_PLAN, False)
    assert "Pro AI" in error["message"]
    assert fake.hits(SUMMARIZER_PATH) == 1


@pytest.mark.parametrize("inline", [True, False])
async def test_summarizer_inline_references_on_and_off(fake: FakeBrave, mode: str, inline: bool) -> None:
    result, _ = await summarize(fake, mode, {"query": "what is asyncio", "inline_references": inline})
    env = structured(result)
    assert env["references"]
    cited = [ref["url"] for ref in env["references"] if f"({ref['url']})" in env["summary_text"]]
    assert bool(cited) is inline
    sent = [r for r in fake.requests if r.path == SUMMARIZER_PATH][-1]
    assert (("inline_references", "1") in sent.params) is inline


async def test_summarizer_renders_enumerations_as_a_list(fake: FakeBrave, mode: str) -> None:
    result, _ = await summarize(fake, mode, {"query": "what is asyncio"})
    list_lines = [line for line in structured(result)["summary_text"].splitlines() if line.startswith(("- ", "1. "))]
    assert len(list_lines) >= 2
    assert "Sources:" in text_of(result)


async def test_summarizer_needs_exactly_one_of_key_or_query(fake: FakeBrave, mode: str) -> None:
    async with connect(fake, mode) as (mcp, _):
        both = await mcp.call_tool("brave_summarizer", {"key": "k", "query": "q"})
        neither = await mcp.call_tool("brave_summarizer", {"entity_info": True})
    for result in (both, neither):
        assert structured(result)["error"]["code"] == ErrorCode.INVALID_ARGUMENT
    assert fake.requests == []


# -- brave_web_search_help --------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["params", "examples", "limits", "errors", "all"])
async def test_help_topics(fake: FakeBrave, mode: str, topic: str) -> None:
    async with connect(fake, mode) as (mcp, _):
        result = await mcp.call_tool("brave_web_search_help", {"topic": topic})
    doc = structured(result)
    assert doc["topic"] == topic
    if topic in ("params", "all"):
        for tool, model in TOOL_MODELS.items():
            assert {e["name"] for e in doc["parameters"][tool]} == set(model.model_fields)
    if topic in ("errors", "all"):
        assert {e["code"] for e in doc["error_codes"]} == {c.value for c in ErrorCode}
        assert {w["code"] for w in doc["warning_codes"]} == {c.value for c in WarningCode}
    assert fake.requests == []


async def test_help_defaults_to_all(fake: FakeBrave, mode: str) -> None:
    async with connect(fake, mode) as (mcp, _):
        doc = structured(await mcp.call_tool("brave_web_search_help", {}))
    assert doc["topic"] == "all"
    assert {"parameters", "examples", "limits", "error_codes", "warning_codes"} <= set(doc)


# -- brave_web_search_status ------------------------------------------------------------------


async def test_status_unconfigured_sends_nothing(fake: FakeBrave, mode: str) -> None:
    async with connect(fake, mode, make_settings(api_key=None, api_key_source=None)) as (mcp, _):
        report = structured(await mcp.call_tool("brave_web_search_status", {"probe_connectivity": True}))
    assert report["status"] == "unconfigured"
    assert report["key"] == {"configured": False, "source": None, "file": None}
    assert fake.requests == []


async def test_status_ok_with_probe_and_counters(fake: FakeBrave, mode: str) -> None:
    async with connect(fake, mode) as (mcp, _):
        await mcp.call_tool("brave_web_search", {"query": "count me"})
        await mcp.call_tool("brave_web_search", {"query": "count me"})
        result = await mcp.call_tool("brave_web_search_status", {"probe_connectivity": True, "verbose": True})
    report = structured(result)
    assert report["status"] == "ok"
    assert [p["ok"] for p in report["probe"]] == [True, True, True, True]
    assert report["counters"]["web"]["requests"] == 2  # one search (the repeat was a cache hit) + one probe
    assert report["counters"]["web"]["cache_hits"] == 1
    assert report["cache"]["hits"] == 1
    assert report["rate_limit"]["per_second"] is not None
    assert report["uptime_seconds"] >= 0


async def test_status_degraded_when_a_probe_meets_a_fault(fake: FakeBrave, mode: str) -> None:
    fake.inject("503", path="/res/v1/videos/search", times=4)
    async with connect(fake, mode) as (mcp, _):
        result = await mcp.call_tool("brave_web_search_status", {"probe_connectivity": True})
    report = structured(result)
    assert not result.is_error
    assert report["status"] == "degraded"
    videos = next(p for p in report["probe"] if p["search_type"] == "videos")
    assert (videos["ok"], videos["code"]) == (False, "UPSTREAM_ERROR")
    assert [p["ok"] for p in report["probe"] if p["search_type"] != "videos"] == [True, True, True]


async def test_the_key_appears_nowhere_in_any_status_output(fake: FakeBrave, mode: str) -> None:
    fake.inject("422_token", path="/res/v1/news/search")
    outputs: list[str] = []
    async with connect(fake, mode) as (mcp, _):
        for arguments in (
            {},
            {"verbose": True},
            {"include_limits": True},
            {"probe_connectivity": True, "verbose": True, "include_limits": True},
        ):
            result = await mcp.call_tool("brave_web_search_status", arguments)
            outputs.append(json.dumps(structured(result)) + text_of(result))
    for output in outputs:
        assert VALID_KEY not in output
        assert VALID_KEY[:8] not in output
