"""The MCP Inspector's CLI, the pinned npm package, lists our tools and calls one against the real server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testkit.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import user_dirs
from tests.client_programs import CLIENT_TIMEOUT, SERVER, TOOL_NAMES, require_tools

pytestmark = pytest.mark.clients


# ------------------------------------------------------------------------------------------ Inspector


def _inspector(bin_dir: Path, home: Path, env_args: list[str], *method_args: str) -> subprocess.CompletedProcess[str]:
    """The Inspector's CLI, its server's state kept in ``home`` (never the developer's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE_")} | user_dirs(home)
    env_args = [*env_args, *(arg for name, value in user_dirs(home).items() for arg in ("-e", f"{name}={value}"))]
    return subprocess.run(
        [str(bin_dir / "mcp-inspector"), "--cli", "--format", "json", "-q", *env_args, str(SERVER), *method_args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )


def test_inspector_cli_lists_tools_and_calls_web_search(tmp_path: Path) -> None:
    bin_dir = require_tools("mcp-inspector")
    key_file = tmp_path / "api-key"
    key_file.write_text(VALID_KEY + "\n", encoding="utf-8")
    with FakeBraveServer(rate_per_second=1000) as upstream:
        env_args = ["-e", f"BRAVE_SEARCH_BASE_URL={upstream.base_url}", "-e", f"BRAVE_API_KEY_FILE={key_file}"]
        listed = _inspector(bin_dir, tmp_path, env_args, "--method", "tools/list")
        assert listed.returncode == 0, listed.stdout + listed.stderr
        names = [tool["name"] for tool in json.loads(listed.stdout)["result"]["tools"]]
        assert sorted(names) == sorted(TOOL_NAMES)

        called = _inspector(
            bin_dir,
            tmp_path,
            env_args,
            "--method",
            "tools/call",
            "--tool-name",
            "brave_web_search",
            "--tool-args-json",
            '{"query": "hello world", "max_results": 3}',
        )
    assert called.returncode == 0, called.stdout + called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["isError"] is False
    envelope = result["structuredContent"]
    assert envelope["api_version"] == "v1"
    assert envelope["sections"] and envelope["sections"][0]["results"]
    assert result["content"][0]["text"].startswith(envelope["summary"])


def test_inspector_cli_reports_a_missing_key_as_a_tool_error(tmp_path: Path) -> None:
    bin_dir = require_tools("mcp-inspector")
    called = _inspector(
        bin_dir,
        tmp_path,
        [],
        "--method",
        "tools/call",
        "--tool-name",
        "brave_web_search",
        "--tool-args-json",
        '{"query": "x"}',
    )
    assert called.returncode != 0  # the Inspector's CLI exits non-zero on isError: true
    assert "tool_is_error" in called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "MISSING_API_KEY"
