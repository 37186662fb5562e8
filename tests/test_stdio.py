"""A real ``brave-search-mcp`` subprocess on stdio against a real local HTTP fake of Brave."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

pytestmark = pytest.mark.anyio

PROTOCOL = "2025-11-25"


def server_env(base_url: str, **extra: str) -> dict[str, str]:
    """A minimal environment: the fake's URL, a fake key, fast retries; nothing from the developer's shell."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "BRAVE_SEARCH_API_KEY": VALID_KEY,
        "BRAVE_SEARCH_BASE_URL": base_url,
        "BRAVE_SEARCH_RETRY_BASE_MS": "5",
        "BRAVE_SEARCH_RETRY_MAX_MS": "20",
        "BRAVE_SEARCH_TIMEOUT_SECONDS": "2",
    }
    env.update(extra)
    return env


class RpcSession:
    """Line-delimited JSON-RPC over the subprocess pipes, recording every stdout line."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.lines: list[bytes] = []
        self._next_id = 0
        self._pending: dict[int, dict[str, Any]] = {}

    async def send(self, message: dict[str, Any]) -> None:
        await self._stdin.send(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        return self._next_id

    async def response(self, request_id: int) -> dict[str, Any]:
        with anyio.fail_after(30):
            while request_id not in self._pending:
                line = await self._stdout.receive_until(b"\n", 16 * 1024 * 1024)
                self.lines.append(line)
                message = json.loads(line)
                if "id" in message and ("result" in message or "error" in message):
                    self._pending[message["id"]] = message
        return self._pending.pop(request_id)

    async def close_stdin(self) -> None:
        """EOF on stdin is how a host tells a stdio server to stop."""
        await self._stdin.aclose()

    async def drain(self) -> bytes:
        """Whatever stdout still holds after the process closed it."""
        rest = b""
        with anyio.fail_after(10):
            while True:
                try:
                    rest += await self._stdout.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return rest

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.response(await self.request(method, params))


@asynccontextmanager
async def stdio_server(env: dict[str, str]) -> AsyncIterator[RpcSession]:
    async with await anyio.open_process([sys.executable, "-m", "brave_search_mcp"], env=env, stderr=None) as process:
        session = RpcSession(process)
        init = await session.call(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "pytest", "version": "0"}},
        )
        assert init["result"]["serverInfo"]["name"] == "brave-search"
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        try:
            yield session
        finally:
            await session.close_stdin()
            with anyio.fail_after(10):
                await process.wait()
            # everything the server ever wrote to stdout, to the last byte, was JSON-RPC
            rest = await session.drain()
            for line in [*session.lines, *rest.splitlines()]:
                assert json.loads(line)["jsonrpc"] == "2.0"


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
        assert len((await rpc.call("tools/list"))["result"]["tools"]) == 7
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
