"""Issue 22 end to end: real server and CLI processes, the real fake Brave over HTTP, the default SQLite state.

Judged from what the fake recorded (arrival order, its own timestamps, its 429 count), with margins a loaded 2-core
machine keeps: a probe is proven by request order, not by timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from brave_search_mcp.brave.limits import brave_limits
from brave_search_mcp.brave.shared_state import upstream_id
from brave_search_mcp.config import Settings
from brave_search_mcp.state.location import open_state
from brave_search_mcp.user_files import default_cache_path, default_state_path
from testkit.brave.brave import VALID_KEY, FakeBrave, Reply
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, as_user, server_env, stdio_server, user_dirs

pytestmark = pytest.mark.anyio


class StampedBrave(FakeBrave):
    """The fake Brave, stamping when each request arrived and when its answer was ready; the first answer can be
    held back ``first_delay`` seconds (a slow probe), so whether others went out meanwhile shows in the order."""

    def __init__(self, first_delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.first_delay = first_delay
        self.arrived: list[float] = []
        self.answered: list[float] = []
        self._stamp = threading.Lock()

    def handle(
        self, method: str, path: str, params: list[tuple[str, str]], headers: Mapping[str, str], body: bytes = b""
    ) -> Reply:
        with self._stamp:
            first = not self.arrived
            self.arrived.append(time.monotonic())
        if first and self.first_delay:
            time.sleep(self.first_delay)
        reply = super().handle(method, path, params, headers, body)
        with self._stamp:
            self.answered.append(time.monotonic())
        return reply


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def sqlite_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = server_env(base_url)
    env.update(user_dirs(home), **extra)
    del env["BRAVE_SEARCH_STATE"]  # the default a user gets: SQLite in the user's state and cache directories
    return env


async def pipe_burst(rpc: RpcSession, n: int, tag: str, *, first_id: int = 1000) -> dict[int, str]:
    """``n`` calls written in one pipe write (a raw-pipe client); the outcome code of each."""
    ids = range(first_id, first_id + n)
    lines = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "brave_web_search", "arguments": {"query": f"{tag} {i}"}}}).encode() + b"\n"
        for i in ids
    )  # fmt: skip
    await rpc.send_raw(lines)
    replies = {i: (await rpc.response(i, timeout=60))["result"] for i in ids}
    return {i: r["structuredContent"]["error"]["code"] if r["isError"] else "ok" for i, r in replies.items()}


async def test_200_calls_at_once_on_a_1000_per_second_plan_all_succeed_fast(home: Path) -> None:
    """Issue 22: 140 raw-pipe calls at 1,000/s with a 15 s deadline: 110 were refused within 3 s because the queue
    was estimated at a guessed start rate; bursts of 150 stalled. Now every call is served, in a few seconds."""
    fake = StampedBrave(rate_per_second=1000)
    with FakeBraveServer(fake) as upstream:
        env = sqlite_env(upstream.base_url, home, BRAVE_SEARCH_DEADLINE_SECONDS="15")
        async with stdio_server(env) as rpc:
            started = time.monotonic()
            codes = await pipe_burst(rpc, 200, "burst")
            took = time.monotonic() - started
    assert list(codes.values()) == ["ok"] * 200
    assert fake.hits("/web/search") == 200 and fake.rate_limited_count == 0
    assert took < 10.0, took  # about 1 s unloaded


async def test_a_fresh_key_probes_once_and_a_second_process_starts_at_the_learned_plan(home: Path) -> None:
    """Issue 22: ten parallel calls at a 20/s plan. The first process sends one request alone and the other nine
    at 20/s once its answer came (3.1 s by slow start before); a second process over the same state finds the plan
    stored, checks it with one request alone (issue 44), then sends the rest at once. The first answer is held 1 s
    to make the probe show. (The wall times are bench.bursts' figures, not asserted here.)"""
    fake = StampedBrave(first_delay=1.0, rate_per_second=20)
    with FakeBraveServer(fake) as upstream:  # one URL and key: the same plan in the state file for both processes
        async with stdio_server(sqlite_env(upstream.base_url, home)) as rpc:
            assert set((await pipe_burst(rpc, 10, "first process")).values()) == {"ok"}
        fresh = {"arrived": list(fake.arrived), "answered": list(fake.answered)}
        fake.arrived.clear()  # the next first answer is held again
        fake.answered.clear()
        await anyio.sleep(1.1)  # the first process's starts leave Brave's window
        async with stdio_server(sqlite_env(upstream.base_url, home)) as rpc:
            assert set((await pipe_burst(rpc, 10, "second process")).values()) == {"ok"}
    second = {"arrived": fake.arrived, "answered": fake.answered}
    assert fresh["arrived"][1] >= fresh["answered"][0]  # the probe went alone...
    assert fresh["arrived"][-1] - fresh["arrived"][1] < 2.0  # ...then the reported 20/s (nine in 0.45 s unloaded)
    assert second["arrived"][1] >= second["answered"][0]  # the stored plan checked by one request alone...
    assert second["arrived"][-1] - second["arrived"][1] < 0.5  # ...then the nine at once (one window of the plan)
    assert second["arrived"][-1] - second["arrived"][0] < 2.0  # the whole burst at the plan's rate
    assert fake.rate_limited_count == 0


def _cli(args: Sequence[str], base_url: str, home: Path, **extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env.update(BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=base_url, **user_dirs(home), **extra)
    command = [sys.executable, "-m", "brave_search_mcp", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _done(procs: Sequence[subprocess.Popen[str]]) -> Iterator[tuple[int, str, str]]:
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        yield proc.returncode, out, err


def test_search_then_answer_from_the_command_line_share_the_keys_window(home: Path) -> None:
    """Issue 22: ``brave-search-mcp search x && brave-search-mcp answer "…"`` on a key with one 1/s window: the
    answer's POST skipped the shared limiter and failed at once with RATE_LIMITED. It now waits its turn."""
    with FakeBraveServer(rate_per_second=1) as upstream:
        ((code, _, err),) = _done([_cli(["search", "x"], upstream.base_url, home)])
        assert code == 0, err[-500:]
        ((code, out, err),) = _done([_cli(["answer", "why is the sky blue?", "--json"], upstream.base_url, home)])
        assert code == 0, err[-500:]
        assert json.loads(out)["meta"]["attempts"] == 1
        assert upstream.fake.rate_limited_count == 0


def test_the_spending_cap_holds_across_processes(home: Path) -> None:
    """Issue 22 item 2: BRAVE_SEARCH_MONTHLY_REQUESTS=3 for the key, five CLI processes at once: three are served,
    two fail fast naming the cap and the setting; status shows the month's requests and the cap."""
    with FakeBraveServer(rate_per_second=1000) as upstream:
        cap = {"BRAVE_SEARCH_MONTHLY_REQUESTS": "3"}
        procs = [_cli(["search", f"capped {n}", "--json"], upstream.base_url, home, **cap) for n in range(5)]
        results = list(_done(procs))
        ((_, status, _),) = _done([_cli(["status", "--json"], upstream.base_url, home, **cap)])
        assert upstream.fake.hits("/web/search") == 3
    assert sorted(code for code, _, _ in results) == [0, 0, 0, 1, 1]
    refusals = [json.loads(out)["error"] for code, out, _ in results if code != 0]
    assert {e["code"] for e in refusals} == {"QUOTA_EXCEEDED"}
    assert all("BRAVE_SEARCH_MONTHLY_REQUESTS" in e["message"] and e["details"]["cap"] == 3 for e in refusals)
    report = json.loads(status)
    assert report["throttle"]["month"]["requests"] == 3 and report["throttle"]["month"]["cap"] == 3
    assert report["status"] == "paused"


async def _as_if_ten_minutes_passed(home: Path, base_url: str) -> None:
    """The gate's trial time lives in the shared state on the wall clock: move it to now, as 10 minutes would."""
    with as_user(home):
        state_file, cache_file = default_state_path(), default_cache_path()
    state = await open_state(None, cache_max_entries=0, default_path=state_file, cache_path=cache_file)
    try:
        settings = Settings(api_key=VALID_KEY, base_url=base_url)
        limits = brave_limits(state, settings, upstream=upstream_id(base_url, VALID_KEY), clock=time.time)
        await limits.search.limiter.change(lambda plan: replace(plan, quota_trial_at=time.time() - 1))
    finally:
        await state.aclose()


async def test_the_quota_gate_is_shared_by_the_cli_and_the_stdio_server_and_half_opens(home: Path) -> None:
    """Issue 22 item 1 across real processes: a spent month closes the gate for every process of the user (the CLI
    and the stdio server send nothing and say when the trial is; status says paused); once the trial time comes,
    one request goes through and, Brave having months left again (an upgrade), the gate opens for everyone."""
    with FakeBraveServer(rate_per_second=1000) as upstream:
        upstream.fake.inject("429_quota", month_reset=16 * 86400, times=1)
        ((code, out, _),) = _done([_cli(["search", "spends the month", "--json"], upstream.base_url, home)])
        assert (code, json.loads(out)["error"]["code"], upstream.fake.hits()) == (1, "QUOTA_EXCEEDED", 1)
        ((code, out, _),) = _done([_cli(["search", "gate closed", "--json"], upstream.base_url, home)])
        refused = json.loads(out)["error"]
        assert (code, refused["code"], upstream.fake.hits()) == (1, "QUOTA_EXCEEDED", 1)  # nothing sent
        assert 590 <= refused["details"]["next_trial_seconds"] <= 600
        async with stdio_server(sqlite_env(upstream.base_url, home)) as rpc:
            closed, _ = await rpc.call_tool("brave_web_search", {"query": "closed for the server too"})
            status, _ = await rpc.call_tool("brave_web_search_status", {})
        assert closed["structuredContent"]["error"]["code"] == "QUOTA_EXCEEDED" and upstream.fake.hits() == 1
        assert status["structuredContent"]["status"] == "paused"
        assert "monthly quota is used up" in status["structuredContent"]["reasons"][0]
        await _as_if_ten_minutes_passed(home, upstream.base_url)
        ((code, out, err),) = _done([_cli(["search", "the trial", "--json"], upstream.base_url, home)])
        assert (code, upstream.fake.hits()) == (0, 2), err[-500:]  # the trial, answered with months left
        async with stdio_server(sqlite_env(upstream.base_url, home)) as rpc:
            opened, _ = await rpc.call_tool("brave_web_search", {"query": "open for everyone"})
            status, _ = await rpc.call_tool("brave_web_search_status", {})
        assert not opened["isError"] and upstream.fake.hits() == 3
        assert status["structuredContent"]["status"] == "ok"
