"""The API key travels only in the X-Subscription-Token header: never in tool output, a log line or a file.

A distinctive fake key (which the fake Brave accepts) is run through every tool and every error path, twice:
in memory through the MCP client with every logger at DEBUG (caplog), and as the real stdio subprocess with
temporary HOME, TMPDIR and working directory, its stderr captured and every file under those directories read
afterwards. Each run also proves it exercised what it claims (DEBUG lines present, every expected code seen),
so an empty log cannot pass for a clean one.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.types import TextContent
from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import JsonLineFormatter
from testkit.brave.brave import (
    FAULTS,
    IMAGES_PATH,
    NEWS_PATH,
    SUMMARIZER_PATH,
    VIDEOS_PATH,
    WEB_PATH,
    FakeBrave,
)
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.in_memory import mcp_client
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

KEY = "k3y-C4NARY-q8Zr7Tx2-Wv5Lm9-fake"
# The key, and pieces of it a partial print (a prefix, a suffix, a middle) would leave behind.
MARKERS = (KEY, "k3y-C4NARY-q8Zr", "q8Zr7Tx2", "Wv5Lm9-fake")
SEARCH_PATHS = {"web": WEB_PATH, "news": NEWS_PATH, "images": IMAGES_PATH, "videos": VIDEOS_PATH}
SEARCH_TYPES = tuple(SEARCH_PATHS)
# Faults that cost real time (the per-attempt timeout): tried on one search and one status probe only.
SLOW_FAULTS = frozenset({"timeout", "hang", "slow_body"})
FAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "timeout": {"seconds": 2.0},
    "hang": {"seconds": 2.0},
    "slow_body": {"delay": 0.1, "chunk_size": 64},
    "oversize": {"size": 1024 * 1024},
    "429": {"retry_after": 0, "reset": 0},  # no real waiting in the subprocess
    "429_quota": {"month_reset": 0},  # the month "resets" at once, so later steps are not gated
}
RETRIES = 1
CALL_LIMIT = 15.0


def find_key(data: str | bytes) -> str | None:
    """The first key marker found in ``data`` (case-insensitive), or None."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lowered = text.lower()
    return next((marker for marker in MARKERS if marker.lower() in lowered), None)


def assert_no_key(data: str | bytes, where: str) -> None:
    marker = find_key(data)
    assert marker is None, f"the API key ({marker!r}) leaked into {where}"


def fake_brave() -> FakeBrave:
    # No "pending" summarizer polls: the server's real sleeps between polls would only slow the runs down.
    return FakeBrave(api_keys=[KEY], rate_per_second=1000, monthly_limit=0, summarizer_pending_polls=0)


# -- the scenario: every tool through every error path ------------------------------------------

Call = Callable[[str, dict[str, Any]], Awaitable[tuple[dict[str, Any], str]]]


@dataclass
class Transcript:
    """Everything the tools answered, and which error codes that covered."""

    outputs: list[str] = field(default_factory=list)
    codes: set[str] = field(default_factory=set)

    def add(self, structured: dict[str, Any], text: str) -> dict[str, Any]:
        self.outputs.append(text)
        self.outputs.append(json.dumps(structured, ensure_ascii=False))
        error = structured.get("error")
        if error is not None:
            self.codes.add(error["code"])
        for probe in structured.get("probe", []):
            if not probe["ok"]:
                self.codes.add(probe["code"])
        return structured


# Every code a healthy key can meet through the four tools (MISSING_API_KEY needs no key; INTERNAL_ERROR a bug).
EXPECTED_CODES = frozenset(
    {
        "INVALID_ARGUMENT",
        "AUTH_FAILED",
        "NOT_IN_PLAN",
        "RATE_LIMITED",
        "QUOTA_EXCEEDED",
        "UPSTREAM_VALIDATION",
        "UPSTREAM_ERROR",
        "TIMEOUT",
        "NETWORK_ERROR",
        "PARSE_ERROR",
        "RESPONSE_TOO_LARGE",
        "NO_RESULTS",
        "SUMMARY_UNAVAILABLE",
    }
)


async def run_scenario(fake: FakeBrave, call: Call) -> Transcript:
    """Every fault the fake knows through every tool that reaches Brave, then the other error paths."""
    seen = Transcript()

    async def record(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        structured, text = await call(tool, arguments)
        return seen.add(structured, text)

    async def summarizer_key() -> str:
        envelope = await record("brave_web_search", {"query": "leak check summary", "summary": True})
        key = envelope["summarizer_key"]
        assert isinstance(key, str)
        return key

    for index, fault in enumerate(sorted(FAULTS)):
        search_type = SEARCH_TYPES[index % len(SEARCH_TYPES)]
        targets = ["search", "status"] if fault in SLOW_FAULTS else ["search", "summary-query", "summary-key", "status"]
        for target in targets:
            fake.reset()
            arguments: dict[str, Any]
            if target == "search":
                tool, path = "brave_web_search", SEARCH_PATHS[search_type]
                arguments = {"query": f"leak {fault}", "search_type": search_type}
            elif target == "status":
                tool, path = "brave_web_search_status", SEARCH_PATHS[search_type]
                arguments = {"probe_connectivity": True, "verbose": True}
            elif target == "summary-query":
                tool, path, arguments = "brave_summarizer", WEB_PATH, {"query": f"leak {fault}"}
            else:
                tool, path = "brave_summarizer", SUMMARIZER_PATH
                arguments = {"key": await summarizer_key()}
            fake.inject(fault, path=path, times=RETRIES + 1, **FAULT_OPTIONS.get(fault, {}))
            await record(tool, arguments)
        # Help answers the same while the upstream is broken.
        await record("brave_web_search_help", {"topic": "all"})

    fake.reset()
    for tool in ("brave_web_search", "brave_summarizer", "brave_web_search_help", "brave_web_search_status"):
        await record(tool, {"bogus": KEY[:3], "query": 5})  # unknown field, wrong type
    fake.no_results_for.add("nothing here")
    fake.summary_failing.add("a summary that fails")
    fake.summary_never_ready.add("a summary never ready")
    await record("brave_web_search", {"query": "nothing here"})
    await record("brave_summarizer", {"query": "a summary that fails"})
    await record("brave_summarizer", {"query": "a summary never ready", "deadline_seconds": 0.3})
    await record("brave_summarizer", {"key": "an unknown summarizer key"})
    envelope = await record(
        "brave_web_search",
        {"query": "debug me", "debug": True, "include_raw_payload": True, "include_request_url": True},
    )
    assert envelope["debug"]["request_url"].startswith("http")
    assert envelope["debug"]["raw_payload"]
    await record("brave_web_search_status", {"verbose": True, "include_limits": True, "probe_connectivity": True})
    # Last, because it holds the throttle for a minute: a wait too long to hold the call for is given up at once.
    fake.inject("429", retry_after=120)
    await record("brave_web_search", {"query": "long wait"})
    return seen


# -- in memory, every logger at DEBUG ------------------------------------------------------------

LOGGERS = ("", "brave_search_mcp", "httpx2", "httpcore", "mcp", "tests", "asyncio")


def assert_logs_clean(caplog: pytest.LogCaptureFixture) -> None:
    formatter = JsonLineFormatter()
    for record in caplog.records:
        where = f"log record {record.name}:{record.lineno}"
        assert_no_key(record.getMessage(), where)
        assert_no_key(formatter.format(record), where)
        assert_no_key(repr(vars(record)), where)
        if record.exc_info:
            assert_no_key(formatter.formatException(record.exc_info), where)
    assert_no_key(caplog.text, "the captured log text")


@pytest.mark.parametrize("face", ["mock", "server"])
async def test_no_key_in_tool_output_or_logs_in_memory(face: str, caplog: pytest.LogCaptureFixture) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    fake = fake_brave()
    with FakeBraveServer(fake) as server:
        overrides: dict[str, Any] = {
            "api_key": SecretStr(KEY),
            "retries": RETRIES,
            "timeout_seconds": 0.2,
            "call_deadline_seconds": 5.0,
            "max_response_bytes": 64 * 1024,
            "summarizer_deadline_seconds": 1.0,
        }
        if face == "server":
            overrides["base_url"] = server.base_url
        settings = make_settings(**overrides)
        transport = fake.mock_transport() if face == "mock" else None
        async with (
            mcp_client(settings, transport) as (mcp, _clock),
        ):

            async def call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
                with anyio.fail_after(CALL_LIMIT):
                    result = await mcp.call_tool(tool, arguments)
                block = result.content[0]
                assert isinstance(block, TextContent)
                assert result.structured_content is not None
                return result.structured_content, block.text

            seen = await run_scenario(fake, call)
    assert seen.codes >= EXPECTED_CODES, EXPECTED_CODES - seen.codes
    for output in seen.outputs:
        assert_no_key(output, "a tool result")
    # The run really logged at DEBUG: one line per attempt from the client, one per call from the service.
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("brave request endpoint=") for m in messages)
    assert sum(m == "tool call" for m in messages) >= len(seen.outputs) // 2
    assert_logs_clean(caplog)


# -- an upstream (or proxy) that echoes the key back ---------------------------------------------


def _error_json(status: int, code: str, detail: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {"id": "e", "status": status, "code": code, "detail": detail, "meta": meta},
    }


def echoing_replies(token: str) -> dict[str, httpx2.Response]:
    """Error answers that repeat the token wherever Brave's error shapes have room for text."""
    return {
        "validation": httpx2.Response(
            422,
            json=_error_json(
                422,
                "VALIDATION",
                f"bad {token}",
                {"errors": [{"loc": ["query", token], "msg": f"no {token}", "input": token}], "component": token},
            ),
        ),
        "rate-limited": httpx2.Response(
            429, json=_error_json(429, "RATE_LIMITED", f"slow {token}", {"plan": token}), headers={"Retry-After": token}
        ),
        "quota": httpx2.Response(429, json=_error_json(429, "QUOTA_LIMITED", f"quota {token}", {"plan": token})),
        "token-invalid": httpx2.Response(
            422, json=_error_json(422, "SUBSCRIPTION_TOKEN_INVALID", f"token {token} is invalid", {"plan": token})
        ),
        "not-in-plan": httpx2.Response(400, json=_error_json(400, "OPTION_NOT_IN_PLAN", token, {"plan": token})),
        "plain-500": httpx2.Response(500, text=f"upstream said {token}"),
        "proxy-403": httpx2.Response(403, text=f"<html><p>blocked {token}</p></html>"),
        "bad-json-200": httpx2.Response(200, text=f'{{"type": "search", "echo": "{token}"'),
        "unknown-error-json": httpx2.Response(418, json=_error_json(418, "TEAPOT", token, {"component": token})),
    }


@pytest.mark.parametrize("reply", sorted(echoing_replies("x")))
@pytest.mark.parametrize("tool", ["brave_web_search", "brave_summarizer"])
async def test_an_upstream_echoing_the_key_does_not_leak_it(
    reply: str, tool: str, caplog: pytest.LogCaptureFixture
) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return echoing_replies(request.headers["x-subscription-token"])[reply]

    settings = make_settings(api_key=SecretStr(KEY), retries=RETRIES)
    clock = FakeClock()
    async with BraveClient(settings, transport=httpx2.MockTransport(handler), clock=clock, sleep=clock.sleep) as brave:
        service = tool_boundary(settings, brave, clock=clock, sleep=clock.sleep)
        arguments = {"query": "echo"} if tool == "brave_web_search" else {"key": "echo"}
        with anyio.fail_after(CALL_LIMIT):
            outcome = await service.call(tool, arguments)
    assert outcome.is_error
    assert_no_key(outcome.text, "the tool's text")
    assert_no_key(json.dumps(outcome.structured, ensure_ascii=False), "the tool's envelope")
    assert_logs_clean(caplog)


async def test_an_upstream_echoing_the_key_as_its_error_code_does_not_leak_it() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        token = request.headers["x-subscription-token"]
        return httpx2.Response(401, json=_error_json(401, token, "unauthorized", {}))

    settings = make_settings(api_key=SecretStr(KEY), retries=0)
    clock = FakeClock()
    async with BraveClient(settings, transport=httpx2.MockTransport(handler), clock=clock, sleep=clock.sleep) as brave:
        outcome = await tool_boundary(settings, brave, clock=clock, sleep=clock.sleep).call(
            "brave_web_search", {"query": "echo"}
        )
    assert outcome.structured["error"]["code"] == "AUTH_FAILED"
    assert_no_key(outcome.text, "the tool's text")
    assert_no_key(json.dumps(outcome.structured), "the tool's envelope")


# -- the real stdio server, with its own HOME, TMPDIR and working directory ----------------------


class StdioSession:
    """Line-delimited JSON-RPC with a server subprocess; its stderr is drained into ``stderr`` meanwhile."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdout_lines: list[bytes] = []
        self.stderr = bytearray()
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    async def drain_stderr(self, stream: ByteReceiveStream) -> None:
        async for chunk in stream:
            self.stderr += chunk

    async def drain_stdout(self) -> None:
        """Whatever the server still wrote before it exited."""
        rest = bytearray()
        while True:
            try:
                rest += await self._stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                break
        self.stdout_lines.extend(line for line in bytes(rest).splitlines() if line.strip())

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with anyio.fail_after(CALL_LIMIT):
            while True:
                line = await self._stdout.receive_until(b"\n", 32 * 1024 * 1024)
                self.stdout_lines.append(line)
                message: dict[str, Any] = json.loads(line)
                if message.get("id") == request_id:
                    return message

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        reply = await self.request("tools/call", {"name": tool, "arguments": arguments})
        result = reply["result"]
        return result["structuredContent"], result["content"][0]["text"]


@dataclass(frozen=True)
class Sandbox:
    """Directories the server may write to: its HOME, its TMPDIR and its working directory."""

    home: Path
    tmp: Path
    cwd: Path

    def files(self) -> Iterator[Path]:
        for root in (self.home, self.tmp, self.cwd):
            for dirpath, _, filenames in os.walk(root):
                for name in filenames:
                    yield Path(dirpath) / name


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    dirs = Sandbox(tmp_path / "home", tmp_path / "tmp", tmp_path / "work")
    for path in (dirs.home, dirs.tmp, dirs.cwd):
        path.mkdir()
    return dirs


def stdio_env(sandbox: Sandbox, base_url: str, log_format: str) -> dict[str, str]:
    home = str(sandbox.home)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "TMPDIR": str(sandbox.tmp),
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_STATE_HOME": f"{home}/.local/state",
        "BRAVE_SEARCH_API_KEY": KEY,
        "BRAVE_SEARCH_BASE_URL": base_url,
        "BRAVE_SEARCH_LOG_LEVEL": "DEBUG",
        "BRAVE_SEARCH_LOG_FORMAT": log_format,
        "BRAVE_SEARCH_TIMEOUT_SECONDS": "0.2",
        "BRAVE_SEARCH_RETRIES": str(RETRIES),
        "BRAVE_SEARCH_RETRY_BASE_MS": "1",
        "BRAVE_SEARCH_RETRY_MAX_MS": "2",
        "BRAVE_SEARCH_RATE_LIMIT": "1000",
        "BRAVE_SEARCH_BURST": "1000",
        "BRAVE_SEARCH_MAX_RESPONSE_BYTES": str(64 * 1024),
        "BRAVE_SEARCH_SUMMARIZER_DEADLINE_SECONDS": "1",
    }


@asynccontextmanager
async def stdio_server(env: dict[str, str], cwd: Path) -> AsyncIterator[StdioSession]:
    command = [sys.executable, "-m", "brave_search_mcp"]
    async with await anyio.open_process(command, env=env, cwd=cwd) as process, anyio.create_task_group() as tg:
        session = StdioSession(process)
        assert process.stderr is not None
        tg.start_soon(session.drain_stderr, process.stderr)
        init = await session.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "leak-check", "version": "0"}},
        )
        assert init["result"]["serverInfo"]["name"] == "brave-search"
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield session
        assert process.stdin is not None
        await process.stdin.aclose()  # EOF: the server's cue to stop
        with anyio.fail_after(10):
            assert await process.wait() == 0
            await session.drain_stdout()


async def test_no_key_in_stdio_output_stderr_or_files(sandbox: Sandbox) -> None:
    fake = fake_brave()
    with FakeBraveServer(fake) as server:
        async with stdio_server(stdio_env(sandbox, server.base_url, "json"), sandbox.cwd) as rpc:
            seen = await run_scenario(fake, rpc.call)
    assert seen.codes >= EXPECTED_CODES, EXPECTED_CODES - seen.codes
    for line in rpc.stdout_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
        assert_no_key(line, "the server's stdout")
    stderr = bytes(rpc.stderr)
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    # The run really logged at DEBUG, in JSON lines: per attempt and per call.
    assert any(line["msg"].startswith("brave request endpoint=") for line in lines)
    assert {line.get("outcome") for line in lines} >= EXPECTED_CODES
    assert_no_key(stderr, "the server's stderr")
    for path in sandbox.files():
        assert_no_key(path.read_bytes(), f"the file {path}")


async def test_no_key_in_text_format_logs(sandbox: Sandbox) -> None:
    fake = fake_brave()
    with FakeBraveServer(fake) as server:
        async with stdio_server(stdio_env(sandbox, server.base_url, "text"), sandbox.cwd) as rpc:
            fake.inject("422_token")
            auth, _ = await rpc.call("brave_web_search", {"query": "text logs"})
            fake.inject("reset", times=RETRIES + 1)
            network, _ = await rpc.call("brave_web_search", {"query": "text logs again"})
            ok, text = await rpc.call(
                "brave_web_search", {"query": "debug text", "debug": True, "include_request_url": True}
            )
    assert auth["error"]["code"] == "AUTH_FAILED"
    assert network["error"]["code"] == "NETWORK_ERROR"
    assert "error" not in ok
    assert_no_key(text, "the tool's text")
    stderr = bytes(rpc.stderr)
    assert b"DEBUG brave_search_mcp.brave.client: brave request endpoint=web" in stderr
    assert_no_key(stderr, "the server's stderr")
    for line in rpc.stdout_lines:
        assert_no_key(line, "the server's stdout")
    for path in sandbox.files():
        assert_no_key(path.read_bytes(), f"the file {path}")
