"""LLM context, local search and Answers end to end: the real stdio process, and every Brave error path per tool."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient
from testkit.brave.brave import FakeBrave
from testkit.brave.faults import fault_cases
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.stdio import server_env, stdio_server
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

CALLS: dict[str, dict[str, Any]] = {
    "brave_llm_context": {"query": "rust async runtimes", "max_chars": 2000},
    "brave_local_search": {"query": "coffee", "location": "san francisco ca united states"},
    "brave_answer": {"question": "What is the tallest mountain?"},
}


async def _call(rpc: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await rpc.call("tools/call", {"name": name, "arguments": arguments})
    result: dict[str, Any] = reply["result"]
    return result


async def test_each_new_tool_answers_over_real_stdio(fake_server: FakeBraveServer) -> None:
    async with stdio_server(server_env(fake_server.base_url)) as rpc:
        listed = (await rpc.call("tools/list"))["result"]["tools"]
        assert {"brave_llm_context", "brave_local_search", "brave_answer"} <= {t["name"] for t in listed}
        context = await _call(rpc, "brave_llm_context", CALLS["brave_llm_context"])
        places = await _call(rpc, "brave_local_search", CALLS["brave_local_search"])
        nearby = await _call(rpc, "brave_local_search", {"query": "coffee near alexanderplatz"})
        answer = await _call(rpc, "brave_answer", CALLS["brave_answer"])
        fake_server.fake.answers.stream_cut_after = 3
        cut = await _call(rpc, "brave_answer", {"question": "A question whose stream breaks"})
    assert not context["isError"] and context["structuredContent"]["sources"]
    assert len(context["content"][0]["text"]) <= 2000
    assert not places["isError"] and places["structuredContent"]["meta"]["path"] == "place_search"
    assert places["structuredContent"]["sections"][0]["key"] == "places"
    assert nearby["structuredContent"]["meta"]["path"] in ("web_locations", "web_fallback")
    assert not answer["isError"] and answer["structuredContent"]["answer"]
    assert answer["structuredContent"]["sources"]
    assert not cut["isError"]  # what arrived, with a warning: never an exception
    assert "STREAM_INTERRUPTED" in {w["code"] for w in cut["structuredContent"]["warnings"]}


# Brave's documented failures (reference/brave-api.md §6) and the code each new tool must return.
ERROR_PATHS = fault_cases(
    "422_token", "404_subscription", "403", "422_validation", "429", "429_quota", "503", "403_bare", "invalid_json"
)


@pytest.mark.parametrize("tool", sorted(CALLS))
@pytest.mark.parametrize(("fault", "code"), ERROR_PATHS)
async def test_every_documented_brave_error_has_its_code_for_each_new_tool(tool: str, fault: str, code: str) -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    settings = make_settings(retries=1)
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        plan_only = tool == "brave_local_search" and code == "NOT_IN_PLAN"
        fake.inject(fault, times=1 if plan_only else 5)  # only the local endpoint lacks the plan; web still works
        outcome = await tool_boundary(settings, client, clock=clock, sleep=clock.sleep).call(tool, CALLS[tool])
    if tool == "brave_local_search" and code == "NOT_IN_PLAN":
        assert not outcome.is_error  # no local plan: plain web results with a warning, never a bare failure
        return
    if tool == "brave_answer" and fault == "invalid_json":
        assert outcome.is_error  # a stream with no answer in it is an error, whatever its code
        return
    assert outcome.is_error, outcome.text
    assert outcome.structured["error"]["code"] == code, outcome.text


async def test_status_says_per_tool_what_the_plan_was_seen_to_allow_never_guessing() -> None:
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1000, clock=clock)
    fake.plan_lacks.add("answers")
    settings = make_settings(retries=1)
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        before = (await tools.call("brave_web_search_status", {})).structured["plan"]
        await tools.call("brave_web_search", {"query": "allowed"})
        refused = await tools.call("brave_answer", {"question": "not in this plan?"})
        status = await tools.call("brave_web_search_status", {})
    assert set(before.values()) == {"unknown"}  # nothing asked yet: no guess
    assert refused.structured["error"]["code"] == "NOT_IN_PLAN"
    assert (
        "brave_answer" in refused.structured["error"]["message"] or "Answers" in refused.structured["error"]["message"]
    )
    plan = status.structured["plan"]
    assert plan["brave_web_search"] == "allowed"
    assert plan["brave_answer"] == "not_in_plan"
    assert plan["brave_llm_context"] == "unknown"
    assert "plan seen: brave_web_search allowed" in status.text


def _recorder(messages: list[str | None]) -> Any:
    """A progress callback that keeps each message."""

    async def note(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    return note


async def test_long_calls_send_progress_notifications_when_the_client_asks() -> None:
    from mcp import Client

    from brave_search_mcp.faces.mcp_server import build_server

    fake = FakeBrave(rate_per_second=1000, summarizer_pending_polls=2)
    settings = make_settings()
    seen: dict[str, list[str | None]] = {"brave_answer": [], "brave_summarizer": [], "brave_web_search_status": []}
    calls = (
        ("brave_answer", {"question": "progress please"}),
        ("brave_summarizer", {"query": "progress please"}),
        ("brave_web_search_status", {"probe_connectivity": True}),
    )
    async with (
        BraveClient(settings, transport=fake.mock_transport()) as client,
        Client(build_server(settings, client)) as mcp,
    ):
        for tool, arguments in calls:
            result = await mcp.call_tool(tool, arguments, progress_callback=_recorder(seen[tool]))
            assert not result.is_error, result.content
    assert all(seen.values()), seen
    assert "probed videos" in seen["brave_web_search_status"]
