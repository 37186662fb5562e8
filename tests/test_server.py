"""The MCP face end to end, in memory, in both protocol modes, against the fake Brave upstream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from brave_search_mcp._version import __version__
from brave_search_mcp.config import Settings
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import FakeBrave
from testkit.in_memory import mcp_client
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio
TOOL_NAMES = tuple(tool.name for tool in all_tools())


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def _connect(settings: Settings, fake: FakeBrave, mode: str) -> AsyncIterator[Client]:
    async with mcp_client(settings, fake.mock_transport(), mode=mode) as (client, _clock):
        yield client


@pytest.fixture
async def mcp(fake: FakeBrave, mode: str) -> AsyncIterator[Client]:
    async with _connect(make_settings(), fake, mode) as connected:
        yield connected


def _text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _error(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error, _text(result)
    assert result.structured_content is not None
    error: dict[str, Any] = result.structured_content["error"]
    text = _text(result)
    assert text.startswith(error["code"])
    assert "Traceback" not in text
    return error


async def test_tools_list_is_strict_annotated_and_small(mcp: Client) -> None:
    tools = (await mcp.list_tools()).tools
    assert [t.name for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert tool.title
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is None  # envelopes travel as structuredContent without a costly schema
        assert tool.description is not None and len(tool.description) < 400
        for prop in tool.input_schema["properties"].values():
            assert len(prop.get("enum", [])) <= 5  # long lists live in the help tool
    payload = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])
    assert len(payload.encode()) <= 13_000  # issue 39: every tool with its newer parameters in 13 KB
    assert "zh-hant" not in payload


async def test_initialize_reports_name_version_and_instructions(fake: FakeBrave) -> None:
    async with _connect(make_settings(), fake, "legacy") as connected:
        info = connected.server_info
        assert info is not None
        assert info.name == "brave-search"
        assert info.version == __version__
        assert connected.instructions is not None and "brave_summarizer" in connected.instructions


async def test_web_search_returns_text_and_envelope(mcp: Client, fake: FakeBrave) -> None:
    result = await mcp.call_tool("brave_web_search", {"query": "hello world"})
    assert not result.is_error
    env = result.structured_content
    assert env is not None
    assert env["api_version"] == "v1"
    assert env["meta"]["search_type"] == "web"
    assert env["meta"]["server_version"] == __version__
    web = next(s for s in env["sections"] if s["key"] == "web")
    assert len(web["results"]) == 10
    text = _text(result)
    assert text.splitlines()[0] == env["summary"]
    assert web["results"][0]["url"] in text
    assert "<strong>" not in text and "&amp;" not in text
    assert fake.hits("/web/search") == 1


@pytest.mark.parametrize("search_type", ["web", "news", "images", "videos"])
async def test_every_search_type(mcp: Client, search_type: str) -> None:
    result = await mcp.call_tool("brave_web_search", {"query": "rust async", "search_type": search_type})
    assert not result.is_error, _text(result)
    env = result.structured_content
    assert env is not None
    assert env["meta"]["search_type"] == search_type
    assert env["sections"][0]["key"] == search_type
    assert env["meta"]["returned"] > 0


async def test_brave_aliases_are_accepted(mcp: Client, fake: FakeBrave) -> None:
    result = await mcp.call_tool(
        "brave_web_search",
        {"query": "q", "count": 3, "search_lang": "de", "ui_lang": "de-DE", "safesearch": "off"},
    )
    assert not result.is_error, _text(result)
    sent = dict(fake.requests[-1].params)
    assert (sent["count"], sent["search_lang"], sent["ui_lang"], sent["safesearch"]) == ("3", "de", "de-DE", "off")


async def test_alias_and_canonical_together_is_rejected(mcp: Client, fake: FakeBrave) -> None:
    error = _error(await mcp.call_tool("brave_web_search", {"query": "q", "count": 3, "max_results": 4}))
    assert error["code"] == "INVALID_ARGUMENT"
    assert "max_results" in error["message"] and "count" in error["message"]
    assert fake.requests == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"query": "q", "bogus": 1}, "bogus"),
        ({"query": "q", "max_results": "many"}, "max_results"),
        ({"query": ["not", "a", "string"]}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "q", "search_type": "maps"}, "search_type"),
        ({"query": "q", "result_filter": ["nonsense"]}, "result_filter"),
        ({"query": "q", "safe_search": "medium"}, "safe_search"),
    ],
)
async def test_invalid_arguments_are_envelopes_naming_the_field(
    mcp: Client, fake: FakeBrave, arguments: dict[str, Any], field: str
) -> None:
    error = _error(await mcp.call_tool("brave_web_search", arguments))
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["retryable"] is False
    assert error["details"]["field"] == field
    assert fake.requests == []


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("brave_summarizer", {"query": "q", "nested": {"x": 1}}, "nested"),
        ("brave_summarizer", {}, ""),
        ("brave_web_search_help", {"topic": "everything"}, "topic"),
        ("brave_web_search_status", {"probe": True}, "probe"),
    ],
)
async def test_other_tools_reject_unknown_or_bad_fields(
    mcp: Client, tool: str, arguments: dict[str, Any], field: str
) -> None:
    error = _error(await mcp.call_tool(tool, arguments))
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["details"].get("field", "") == field


@pytest.mark.parametrize(
    ("fault", "times", "code", "retryable"),
    [
        ("422_token", 1, "AUTH_FAILED", False),
        ("404_subscription", 1, "AUTH_FAILED", False),
        ("400_not_in_plan", 1, "NOT_IN_PLAN", False),
        ("403", 1, "NOT_IN_PLAN", False),
        ("429_quota", 1, "QUOTA_EXCEEDED", False),
        ("429", 4, "RATE_LIMITED", True),
        ("422_validation", 1, "UPSTREAM_VALIDATION", False),
        ("500", 4, "UPSTREAM_ERROR", True),
        ("html_error", 4, "UPSTREAM_ERROR", True),
        ("invalid_json", 1, "PARSE_ERROR", False),
        ("empty_body", 1, "PARSE_ERROR", False),
        ("oversize", 1, "RESPONSE_TOO_LARGE", False),
        ("refused", 4, "NETWORK_ERROR", True),
        ("timeout", 4, "TIMEOUT", True),
    ],
)
async def test_every_upstream_fault_is_an_error_envelope(
    mcp: Client, fake: FakeBrave, fault: str, times: int, code: str, retryable: bool
) -> None:
    options: dict[str, Any] = {"month_reset": 0} if fault == "429_quota" else {}  # no lasting quota gate
    fake.inject(fault, times=times, **options)
    result = await mcp.call_tool("brave_web_search", {"query": "fault"})
    error = _error(result)
    assert (error["code"], error["retryable"]) == (code, retryable)
    assert result.structured_content is not None
    assert result.structured_content["meta"]["trace_id"]
    # and the server goes on answering
    again = await mcp.call_tool("brave_web_search", {"query": "after the fault"})
    assert not again.is_error, _text(again)


async def test_no_results_is_an_error_only_when_every_section_is_empty(mcp: Client, fake: FakeBrave) -> None:
    fake.no_results_for.add("nothing here")
    error = _error(await mcp.call_tool("brave_web_search", {"query": "nothing here"}))
    assert error["code"] == "NO_RESULTS"
    assert "No web results found" in error["message"]


async def test_debug_controls_only_with_debug(mcp: Client, fake: FakeBrave) -> None:
    first = await mcp.call_tool("brave_web_search", {"query": "cache me", "disable_cache": True})
    assert first.structured_content is not None
    assert "DEBUG_OPTION_IGNORED" in {w["code"] for w in first.structured_content["warnings"]}
    assert "debug" not in first.structured_content
    second = await mcp.call_tool("brave_web_search", {"query": "cache me"})
    assert second.structured_content is not None and second.structured_content["meta"]["cached"] is True
    assert fake.hits("/web/search") == 1

    debug = await mcp.call_tool(
        "brave_web_search",
        {
            "query": "cache me",
            "debug": True,
            "disable_cache": True,
            "include_raw_payload": True,
            "include_request_url": True,
        },
    )
    assert debug.structured_content is not None
    data = debug.structured_content["debug"]
    assert data["cache_bypassed"] is True
    assert data["request_url"].startswith("https://api.search.brave.com/res/v1/web/search?")
    assert json.loads(data["raw_payload"])["type"] == "search"
    assert fake.hits("/web/search") == 2
    assert "test-key-not-real" not in json.dumps(debug.structured_content) + _text(debug)


async def test_truncation_keeps_text_and_structure_in_agreement(mcp: Client) -> None:
    result = await mcp.call_tool("brave_web_search", {"query": "long page", "max_results": 20, "max_lines": 20})
    env = result.structured_content
    assert env is not None
    codes = [w["code"] for w in env["warnings"]]
    assert "OUTPUT_TRUNCATED" in codes
    text = _text(result)
    assert len(text.splitlines()) <= 20
    urls = [r["url"] for s in env["sections"] for r in s["results"]]
    results = [r for s in env["sections"] if s["key"] not in DIRECT_ANSWERS for r in s["results"]]
    assert env["meta"]["returned"] == len(results)  # the infobox shown above them is not a result
    for url in urls:
        assert url in text


async def test_summary_true_returns_a_key_without_dropping_web_results(mcp: Client, fake: FakeBrave) -> None:
    result = await mcp.call_tool("brave_web_search", {"query": "what is mcp", "summary": True})
    env = result.structured_content
    assert env is not None
    assert env["summarizer_key"]
    assert any(s["key"] == "web" and s["results"] for s in env["sections"])
    sent = fake.requests[-1].params
    assert ("summary", "1") in sent
    assert all(name != "result_filter" or "summarizer" not in value for name, value in sent)


async def test_max_results_bounds_what_is_shown_and_only_real_duplicates_are_reported(mcp: Client) -> None:
    """Issue 37 item 2: max_results 3 used to show 12 results (news, videos, discussions, faq added) with a
    DEDUPLICATED warning blaming the infobox and an FAQ entry for linking web results' pages."""
    shown = await mcp.call_tool("brave_web_search", {"query": "hello world", "max_results": 3})
    env = shown.structured_content
    assert env is not None
    # Issue 43 item 11: the infobox is a direct answer, not a result: shown whatever max_results says, above them
    assert [(s["key"], len(s["results"])) for s in env["sections"]] == [("web", 3), ("infobox", 1)]
    assert env["meta"]["returned"] == 3 and env["warnings"] == []
    lines = _text(shown).split("\n")
    assert lines[1] == "## Infobox" and lines[2].startswith("- ") and lines.index("## Web results") > 2
    named = {"query": "hello world", "max_results": 2, "result_filter": ["web", "news", "faq", "infobox"]}
    env = (await mcp.call_tool("brave_web_search", named)).structured_content
    assert env is not None
    assert [(s["key"], len(s["results"])) for s in env["sections"]] == [
        ("web", 2), ("news", 2), ("faq", 2), ("infobox", 1)
    ]  # fmt: skip
    assert "DEDUPLICATED" not in [w["code"] for w in env["warnings"]]


async def test_a_summary_with_result_filter_keeps_the_key_and_the_named_sections(mcp: Client, fake: FakeBrave) -> None:
    """Issue 37 item 7: the filter used to be sent without "summarizer", so Brave sent no key and the warning
    blamed Brave. A filter naming it would drop the web results (Brave #272): the whole answer is asked for."""
    arguments = {"query": "what is mcp", "summary": True, "result_filter": ["web", "news"], "max_results": 3}
    env = (await mcp.call_tool("brave_web_search", arguments)).structured_content
    assert env is not None
    assert env["summarizer_key"]
    assert [s["key"] for s in env["sections"]] == ["web", "news"]
    assert "SUMMARY_NOT_AVAILABLE" not in [w["code"] for w in env["warnings"]]
    sent = fake.requests[-1].params
    assert ("summary", "1") in sent and "result_filter" not in dict(sent)


async def test_summarizer_by_query_then_by_key(mcp: Client) -> None:
    by_query = await mcp.call_tool("brave_summarizer", {"query": "what is mcp", "inline_references": True})
    assert not by_query.is_error, _text(by_query)
    env = by_query.structured_content
    assert env is not None and env["summary_text"]
    assert env["references"]
    search = await mcp.call_tool("brave_web_search", {"query": "what is rust", "summary": True})
    assert search.structured_content is not None
    key = search.structured_content["summarizer_key"]
    by_key = await mcp.call_tool("brave_summarizer", {"key": key})
    assert not by_key.is_error, _text(by_key)


async def test_help_and_status_through_mcp(mcp: Client) -> None:
    help_result = await mcp.call_tool("brave_web_search_help", {"topic": "errors"})
    assert help_result.structured_content is not None
    assert {e["code"] for e in help_result.structured_content["error_codes"]} >= {"RATE_LIMITED", "NO_RESULTS"}
    status = await mcp.call_tool("brave_web_search_status", {})
    assert status.structured_content is not None
    assert status.structured_content["status"] == "ok"
    assert "test-key-not-real" not in json.dumps(status.structured_content) + _text(status)


async def test_without_a_key_tools_list_and_calls_explain(fake: FakeBrave, mode: str) -> None:
    async with _connect(make_settings(api_key=None, api_key_source=None), fake, mode) as connected:
        assert len((await connected.list_tools()).tools) == len(TOOL_NAMES)
        error = _error(await connected.call_tool("brave_web_search", {"query": "q"}))
        assert error["code"] == "MISSING_API_KEY"
        assert "BRAVE_SEARCH_API_KEY" in error["message"]
        status = await connected.call_tool("brave_web_search_status", {"probe_connectivity": True})
        assert status.structured_content is not None and status.structured_content["status"] == "unconfigured"
    assert fake.requests == []


async def test_disabled_tools_are_not_registered(fake: FakeBrave) -> None:
    settings = make_settings(enabled_tools=("brave_web_search", "brave_web_search_help"))
    async with _connect(settings, fake, "auto") as connected:
        assert [t.name for t in (await connected.list_tools()).tools] == ["brave_web_search", "brave_web_search_help"]


@pytest.mark.parametrize(("transport", "pools"), [("http", 1), ("stdio", 0)])
async def test_an_http_replica_opens_its_connection_pool_before_the_first_call(
    fake: FakeBrave, monkeypatch: pytest.MonkeyPatch, transport: str, pools: int
) -> None:
    """Issue 44: a replica's first search came in a burst and paid the pool's TLS set-up (tens of milliseconds of
    CPU) there; an HTTP server makes it as it starts, a stdio server still on its first request (start-up lean)."""
    import httpx2

    made: list[object] = []
    real = httpx2.AsyncClient

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs.get("transport"))
        return real(*args, **kwargs)

    monkeypatch.setattr(httpx2, "AsyncClient", counted)
    settings = make_settings(transport=transport)
    async with mcp_client(settings, fake.mock_transport()) as (client, _):
        assert len(made) == pools  # the session is open; no tool was called
        await client.call_tool("brave_web_search", {"query": "first"})
    assert len(made) == 1
