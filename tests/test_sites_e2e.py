"""Site filters through a real ``python -m brave_search_mcp``: the stdio server and the command line, on the fake Brave
and on the fake SearXNG (loopback servers): only the named domain comes back, an excluded one never does, and a
bad entry is INVALID_ARGUMENT (exit 1 on the command line) before any request."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.brave.http_server import FakeBraveServer
from testkit.searxng import FakeSearxngServer
from testkit.stdio import server_env, stdio_server, user_dirs

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-m", "brave_search_mcp"]


@pytest.fixture(params=["brave", "searxng"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The server's environment over one provider's fake, on loopback."""
    with FakeBraveServer(rate_per_second=1000) as brave, FakeSearxngServer() as searxng:
        extra = {"BRAVE_SEARCH_PROVIDERS": request.param, "SEARXNG_URL": searxng.base_url}
        yield {**server_env(brave.base_url, **extra), **user_dirs(tmp_path)}
        assert (brave.fake.requests == []) == (request.param == "searxng")


def hosts(envelope: dict[str, Any]) -> set[str]:
    return {r["url"].split("/")[2] for s in envelope["sections"] for r in s["results"] if r["url"]}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


async def test_through_the_stdio_server(env: dict[str, str]) -> None:
    gone = "stackoverflow.com" if env["BRAVE_SEARCH_PROVIDERS"] == "brave" else "site3.example.org"
    async with stdio_server(env) as session:
        only, _ = await session.call_tool("brave_web_search", {"query": "python asyncio", "sites": ["docs.python.org"]})
        plain, _ = await session.call_tool("brave_web_search", {"query": "python asyncio", "max_results": 20})
        without, _ = await session.call_tool(
            "brave_web_search", {"query": "python asyncio", "max_results": 20, "exclude_sites": [gone]}
        )
        bad, _ = await session.call_tool("brave_web_search", {"query": "python asyncio", "sites": ["docs.*.org"]})
    assert not only["isError"] and hosts(only["structuredContent"]) == {"docs.python.org"}
    assert only["structuredContent"]["meta"]["site_filter"]["sites"] == ["docs.python.org"]
    assert hosts(plain["structuredContent"]) - hosts(without["structuredContent"]) == {gone}
    assert bad["isError"] and bad["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
    assert bad["structuredContent"]["error"]["details"]["field"] == "sites"


def test_through_the_command_line(env: dict[str, str]) -> None:
    gone = "stackoverflow.com" if env["BRAVE_SEARCH_PROVIDERS"] == "brave" else "site3.example.org"
    only = cli(env, "search", "python asyncio", "--site", "docs.python.org", "--json")
    assert only.returncode == 0, only.stderr
    assert hosts(json.loads(only.stdout)) == {"docs.python.org"}
    text = cli(env, "search", "python asyncio", "--site", "docs.python.org", "--site", "peps.python.org")
    assert text.returncode == 0 and "docs.python.org" in text.stdout
    assert "stackoverflow.com" not in text.stdout and "site0.example.org" not in text.stdout
    without = cli(env, "search", "python asyncio", "--count", "20", "--exclude-site", gone, "--json")
    assert without.returncode == 0, without.stderr
    assert gone not in hosts(json.loads(without.stdout)) and hosts(json.loads(without.stdout))
    bad = cli(env, "search", "python asyncio", "--exclude-site", "https://stackoverflow.com")
    assert bad.returncode == 1
    assert "INVALID_ARGUMENT" in bad.stderr and "--exclude-site: 'https://stackoverflow.com' has a scheme" in bad.stderr


def test_llm_context_on_the_command_line(tmp_path: Path) -> None:
    with FakeBraveServer(rate_per_second=1000) as brave:
        env = {**server_env(brave.base_url), **user_dirs(tmp_path)}
        done = cli(env, "context", "tokio", "--site", "docs.example.org", "--json")
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert [s["url"] for s in envelope["sources"]] == ["https://docs.example.org/guide"]
    assert envelope["meta"]["site_filter"]["applied_as"] == "goggle"
