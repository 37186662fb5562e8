"""A real ``brave-search-mcp`` subprocess on stdio against a real local HTTP fake of Brave."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

import pytest
from mcp import Client, StdioServerParameters

from brave_search_mcp.faces.mcp_server import ARGUMENTS_SET_ASIDE
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import server_env, stdio_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def upstream() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(rate_per_second=1000) as server:
        yield server


async def test_stdio_initialize_list_and_every_search_type(upstream: FakeBraveServer) -> None:
    async with stdio_server(server_env(upstream.base_url)) as rpc:
        tools = (await rpc.call("tools/list"))["result"]["tools"]
        assert [t["name"] for t in tools] == [
            "brave_web_search",
            "brave_summarizer",
            "brave_llm_context",
            "brave_local_search",
            "brave_answer",
            "read_url",
            "brave_web_search_help",
            "brave_web_search_status",
        ]
        for search_type in ("web", "news", "images", "videos"):
            reply = await rpc.call(
                "tools/call",
                {"name": "brave_web_search", "arguments": {"query": "stdio test", "search_type": search_type}},
            )
            result = reply["result"]
            assert result["isError"] is False, result
            assert result["structuredContent"]["meta"]["search_type"] == search_type
            assert result["content"][0]["type"] == "text"


async def test_stdio_fault_becomes_an_error_envelope_and_server_goes_on(upstream: FakeBraveServer) -> None:
    upstream.fake.inject("503", times=4)
    async with stdio_server(server_env(upstream.base_url, BRAVE_SEARCH_RETRIES="3")) as rpc:
        reply = await rpc.call("tools/call", {"name": "brave_web_search", "arguments": {"query": "fault"}})
        result = reply["result"]
        assert result["isError"] is True
        assert result["structuredContent"]["error"]["code"] == "UPSTREAM_ERROR"
        assert result["structuredContent"]["error"]["retryable"] is True
        assert upstream.fake.hits("/web/search") == 4
        reply = await rpc.call("tools/call", {"name": "brave_web_search", "arguments": {"query": "after"}})
        assert reply["result"]["isError"] is False


async def test_stdio_burst_over_the_plan_rate_gets_no_429() -> None:
    """30 calls at once against a 20-per-second plan: the learned throttle queues them, none is refused.

    The throttle's timing is proven on a fake clock in test_throttle.py; this is the real process end to end,
    at a plan rate high enough to take about a second of real time.
    """
    with FakeBraveServer(rate_per_second=20) as plan:
        async with stdio_server(server_env(plan.base_url)) as rpc:
            ids = [
                await rpc.request(
                    "tools/call", {"name": "brave_web_search", "arguments": {"query": f"burst query {n}"}}
                )
                for n in range(30)
            ]
            replies = [await rpc.response(i) for i in ids]
        assert all(r["result"]["isError"] is False for r in replies), [r["result"] for r in replies]
        assert plan.fake.rate_limited_count == 0
        assert plan.fake.hits("/web/search") == 30


async def test_stdio_without_key_lists_tools_and_explains(upstream: FakeBraveServer) -> None:
    env = server_env(upstream.base_url)
    del env["BRAVE_SEARCH_API_KEY"]
    async with stdio_server(env) as rpc:
        assert len((await rpc.call("tools/list"))["result"]["tools"]) == len(all_tools())
        reply = await rpc.call("tools/call", {"name": "brave_web_search", "arguments": {"query": "q"}})
        assert reply["result"]["structuredContent"]["error"]["code"] == "MISSING_API_KEY"
    assert upstream.fake.requests == []


async def test_stdio_with_the_sdk_client(upstream: FakeBraveServer) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "brave_search_mcp"], env=server_env(upstream.base_url)
    )
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("brave_web_search", {"query": "sdk client", "search_type": "news"})
        assert not result.is_error
        assert result.structured_content is not None
        assert result.structured_content["meta"]["search_type"] == "news"


async def test_stdio_summarizer_with_a_hanging_poll_ends_on_its_deadline(upstream: FakeBraveServer) -> None:
    """A poll that never answers must not hold the call past the caller's 3 s deadline (it used to take 60 s)."""
    async with stdio_server(server_env(upstream.base_url)) as rpc:
        search = await rpc.call(
            "tools/call", {"name": "brave_web_search", "arguments": {"query": "hang the poll", "summary": True}}
        )
        key = search["result"]["structuredContent"]["summarizer_key"]
        upstream.fake.inject("hang", path="/summarizer/search", times=10, seconds=120.0)
        started = time.monotonic()
        reply = await rpc.call(
            "tools/call", {"name": "brave_summarizer", "arguments": {"key": key, "deadline_seconds": 3}}
        )
        elapsed = time.monotonic() - started
    error = reply["result"]["structuredContent"]["error"]
    assert (error["code"], error["retryable"]) == ("TIMEOUT", True)
    assert elapsed <= 3.5


async def test_stdio_calls_the_queue_cannot_start_in_time_are_refused_at_once_not_at_their_deadline(
    upstream: FakeBraveServer,
) -> None:
    """Issue 22: a burst bigger than the queue can start before the deadline, written at once on the pipe.

    At a pinned 10/s (burst 1) each queue place adds ~0.1 s, less than admission's 0.25 s start margin, so the
    first call that does not fit always gets an estimated wait just inside its deadline; tenacity used to retry
    that refusal, sleeping the wait out and sending (or refusing again) at the deadline: the stall. A call the
    queue cannot start in time must be refused at once, and nothing may be sent for it.
    """
    deadline = 3.0
    env = server_env(upstream.base_url, BRAVE_SEARCH_RATE_LIMIT="10", BRAVE_SEARCH_BURST="1",
                     BRAVE_SEARCH_DEADLINE_SECONDS=str(deadline))  # fmt: skip
    async with stdio_server(env) as rpc:
        ids = range(1000, 1060)
        lines = b"".join(
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "brave_web_search", "arguments": {"query": f"overflow {i}"}}}).encode()
            + b"\n"
            for i in ids
        )  # fmt: skip
        started = time.monotonic()
        await rpc.send_raw(lines)  # one write, as a raw-pipe client does
        replies = {i: (await rpc.response(i))["result"] for i in ids}
    code = {i: r["structuredContent"]["error"]["code"] if r["isError"] else "ok" for i, r in replies.items()}
    refused = [rpc.arrived[i] - started for i in ids if code[i] == "RATE_LIMITED"]
    assert set(code.values()) <= {"ok", "RATE_LIMITED"}, code  # nothing ran into its deadline
    assert refused and len(refused) < len(ids)
    assert max(refused) < 1.0, refused  # refused at once (they used to come at the 3 s deadline)
    assert upstream.fake.hits("/web/search") == len(ids) - len(refused)  # nothing was sent for a refused call


@pytest.mark.parametrize(("arguments", "got"), [("not an object", "string"), ([1, 2], "array"), (7, "integer")])
async def test_stdio_arguments_that_are_not_an_object_get_an_invalid_argument_envelope(
    upstream: FakeBraveServer, arguments: object, got: str
) -> None:
    """The README's promise: every rejected argument is an INVALID_ARGUMENT envelope (it was a bare -32602)."""
    async with stdio_server(server_env(upstream.base_url)) as rpc:
        reply = await rpc.call("tools/call", {"name": "brave_web_search", "arguments": arguments})
        result = reply["result"]
        assert result["isError"] is True
        error = result["structuredContent"]["error"]
        assert (error["code"], error["details"]) == ("INVALID_ARGUMENT", {"field": "arguments"})
        assert error["message"] == f"Invalid arguments: expected an object of named arguments, got {got}."
        assert result["content"][0]["text"].startswith("INVALID_ARGUMENT: ")
        unknown = await rpc.call("tools/call", {"name": "nope", "arguments": arguments})  # the unknown tool first
        assert unknown["result"]["structuredContent"]["error"]["details"] == {"field": "tool"}
        # the place they are set aside cannot be written by a client: its arguments are the ones used
        smuggled = await rpc.call(
            "tools/call",
            {"name": "brave_web_search", "arguments": {"query": "q"}, ARGUMENTS_SET_ASIDE: arguments},
        )
        assert smuggled["result"]["isError"] is False
    assert upstream.fake.hits() == 1
