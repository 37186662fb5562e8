"""What a SearXNG instance's bad moments read like through a real ``python -m brave_search_mcp`` (the command line,
in separate processes on one state, and the stdio server) against the fake instance on loopback: a paused provider
is CIRCUIT_OPEN saying what happened, a hang's TIMEOUT advises truly, result_filter names SearXNG's sections."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.stdio import server_env, stdio_server, user_dirs

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-m", "brave_search_mcp"]


@pytest.fixture
def server() -> Iterator[FakeSearxngServer]:
    with FakeSearxngServer(FakeSearxng()) as running:
        yield running


def searxng_env(server: FakeSearxngServer, home: Path, **extra: str) -> dict[str, str]:
    """SearXNG alone, on the default SQLite state of a user under ``home`` (shared by every process)."""
    env = {**server_env("http://127.0.0.1:9", BRAVE_SEARCH_PROVIDERS="searxng", SEARXNG_URL=server.base_url)}
    env.pop("BRAVE_SEARCH_STATE")
    return {**env, **user_dirs(home), "BRAVE_SEARCH_SEARXNG_TIMEOUT_SECONDS": "0.5", **extra}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def error_of(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(run.stdout)
    return envelope["error"]  # type: ignore[no-any-return]


def test_a_paused_instance_is_circuit_open_naming_the_hang_on_the_command_line(
    server: FakeSearxngServer, tmp_path: Path
) -> None:
    server.fake.hanging = True  # kill -STOP
    env = searxng_env(server, tmp_path, BRAVE_SEARCH_BREAKER_THRESHOLD="2")
    hung = [cli(env, "search", f"hang {n}", "--json") for n in range(2)]  # two processes, one after the other
    paused = cli(env, "search", "hang 3", "--json")
    text = cli(env, "search", "hang 4")
    assert [run.returncode for run in (*hung, paused, text)] == [1, 1, 1, 1]
    assert {error_of(run)["code"] for run in hung} == {"TIMEOUT"}
    error = error_of(paused)
    assert (error["code"], error["retryable"]) == ("CIRCUIT_OPEN", True)
    assert "status" not in error["details"]  # nothing answered: no HTTP status is made up
    assert 55_000 <= error["details"]["retry_after_ms"] <= 60_000
    assert error["details"]["what_to_do"].startswith("searxng timed out 2 times in a row, so it is paused; the next")
    assert len(server.fake.search_requests()) == 2  # the paused calls sent nothing
    assert text.stderr.startswith("CIRCUIT_OPEN: Nothing was sent"), text.stderr
    assert "searxng timed out 2 times in a row" in text.stderr and "answered with an error" not in text.stderr
    assert text.stderr.count("so it is paused") == 1  # the advice, said once (not again among the details)


async def test_a_hang_through_the_stdio_server_advises_truly_then_pauses(
    server: FakeSearxngServer, tmp_path: Path
) -> None:
    server.fake.hanging = True
    env = searxng_env(server, tmp_path, BRAVE_SEARCH_BREAKER_THRESHOLD="1", BRAVE_SEARCH_STATE="memory")
    async with stdio_server(env) as session:
        hung, _ = await session.call_tool("brave_web_search", {"query": "hang"})
        paused, _ = await session.call_tool("brave_web_search", {"query": "hang again"})
    timeout_text = hung["content"][0]["text"]
    assert hung["structuredContent"]["error"]["code"] == "TIMEOUT"
    assert "fewer results" not in timeout_text and "hung or are overloaded" in timeout_text
    assert paused["isError"] and paused["structuredContent"]["error"]["code"] == "CIRCUIT_OPEN"
    assert "searxng timed out, so it is paused; the next try goes through in 60 s" in paused["content"][0]["text"]


async def test_result_filter_with_searxng_on_the_command_line_and_the_stdio_server(
    server: FakeSearxngServer, tmp_path: Path
) -> None:
    server.fake.answers = [{"answer": "sha256 hash digest: 2cf24dba", "url": None, "engine": "plugin: hash_plugin"}]
    env = searxng_env(server, tmp_path)
    only = cli(env, "search", "sha256 hello", "--result-filter", "answers")
    three = cli(env, "search", "sha256 hello", "--result-filter", "web,infobox,answers", "--count", "3", "--json")
    async with stdio_server({**env, "BRAVE_SEARCH_STATE": "memory"}) as session:
        called, _ = await session.call_tool("brave_web_search", {"query": "sha256", "result_filter": ["answers"]})
    assert only.returncode == 0, only.stderr
    assert "sha256 hash digest: 2cf24dba" in only.stdout and "PARAM_IGNORED" not in only.stdout + only.stderr
    envelope = json.loads(three.stdout)
    assert [s["key"] for s in envelope["sections"]] == ["web", "answers"]  # the fake instance has no infobox
    assert [w["code"] for w in envelope.get("warnings", [])] == []  # no false "it was not sent"
    assert not called["isError"]
    assert [s["key"] for s in called["structuredContent"]["sections"]] == ["answers"]
