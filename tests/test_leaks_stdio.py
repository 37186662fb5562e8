"""The real stdio server, with its own HOME, TMPDIR and working directory: the key is in no output, log or file.

The scenario (tests/leak_scenario.py) runs through the one stdio client (testkit/stdio.py); stderr is captured
outside the sandbox, and every file the server left under HOME, TMPDIR and the working directory is read afterwards.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, server_env, stdio_server
from tests.leak_scenario import CALL_LIMIT, EXPECTED_CODES, KEY, RETRIES, assert_no_key, fake_brave, run_scenario

pytestmark = pytest.mark.anyio


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
    return server_env(
        base_url,
        for_tests=False,  # the shipped state backend too: its files are read for the key afterwards
        HOME=home,
        TMPDIR=str(sandbox.tmp),
        XDG_CACHE_HOME=f"{home}/.cache",
        XDG_CONFIG_HOME=f"{home}/.config",
        XDG_DATA_HOME=f"{home}/.local/share",
        XDG_STATE_HOME=f"{home}/.local/state",
        BRAVE_SEARCH_API_KEY=KEY,
        BRAVE_SEARCH_LOG_LEVEL="DEBUG",
        BRAVE_SEARCH_LOG_FORMAT=log_format,
        BRAVE_SEARCH_TIMEOUT_SECONDS="0.2",
        BRAVE_SEARCH_RETRIES=str(RETRIES),
        BRAVE_SEARCH_RETRY_BASE_MS="1",
        BRAVE_SEARCH_RETRY_MAX_MS="2",
        BRAVE_SEARCH_RATE_LIMIT="1000",
        BRAVE_SEARCH_BURST="1000",
        BRAVE_SEARCH_MAX_RESPONSE_BYTES=str(64 * 1024),
        BRAVE_SEARCH_SUMMARIZER_DEADLINE_SECONDS="1",
    )


async def tool_call(rpc: RpcSession, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The envelope and the text of one ``tools/call``."""
    result, _ = await rpc.call_tool(tool, arguments, timeout=CALL_LIMIT)
    return result["structuredContent"], result["content"][0]["text"]


async def test_no_key_in_stdio_output_stderr_or_files(sandbox: Sandbox, tmp_path: Path) -> None:
    fake = fake_brave()
    log = tmp_path / "stderr.log"  # outside the sandbox's folders
    with FakeBraveServer(fake) as server, log.open("wb") as stderr:
        async with stdio_server(stdio_env(sandbox, server.base_url, "json"), stderr=stderr, cwd=sandbox.cwd) as rpc:
            seen = await run_scenario(fake, lambda tool, arguments: tool_call(rpc, tool, arguments))
    assert rpc.process.returncode == 0
    assert seen.codes >= EXPECTED_CODES, EXPECTED_CODES - seen.codes
    for line in rpc.lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
        assert_no_key(line, "the server's stdout")
    lines = [json.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
    # The run really logged at DEBUG, in JSON lines: per attempt and per call.
    assert any(line["msg"].startswith("brave request endpoint=") for line in lines)
    assert {line.get("outcome") for line in lines} >= EXPECTED_CODES
    assert_no_key(log.read_bytes(), "the server's stderr")
    for path in sandbox.files():
        assert_no_key(path.read_bytes(), f"the file {path}")


async def test_no_key_in_text_format_logs(sandbox: Sandbox, tmp_path: Path) -> None:
    fake = fake_brave()
    log = tmp_path / "stderr.log"
    with FakeBraveServer(fake) as server, log.open("wb") as stderr:
        async with stdio_server(stdio_env(sandbox, server.base_url, "text"), stderr=stderr, cwd=sandbox.cwd) as rpc:
            fake.inject("422_token")
            auth, _ = await tool_call(rpc, "brave_web_search", {"query": "text logs"})
            fake.inject("reset", times=RETRIES + 1)
            network, _ = await tool_call(rpc, "brave_web_search", {"query": "text logs again"})
            ok, text = await tool_call(
                rpc, "brave_web_search", {"query": "debug text", "debug": True, "include_request_url": True}
            )
    assert rpc.process.returncode == 0
    assert auth["error"]["code"] == "AUTH_FAILED"
    assert network["error"]["code"] == "NETWORK_ERROR"
    assert "error" not in ok
    assert_no_key(text, "the tool's text")
    stderr_text = log.read_bytes()
    assert b"DEBUG brave_search_mcp.brave.client: brave request endpoint=web" in stderr_text
    assert_no_key(stderr_text, "the server's stderr")
    for line in rpc.lines:
        assert_no_key(line, "the server's stdout")
    for path in sandbox.files():
        assert_no_key(path.read_bytes(), f"the file {path}")
