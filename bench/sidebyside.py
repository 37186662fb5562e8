"""Our server and Brave's official one, measured in the same run against ONE fake upstream, interleaved.

Ratios between two servers only mean something when both meet the same machine load, so every
sample alternates between them (the order rotates) and both speak to the same fake.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.brave.brave import VALID_KEY, WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, Timed, server_env

from .official import SERVER_NAME as OFFICIAL_NAME
from .official import OfficialServer, official_env
from .readings import text_of
from .results import FLOOR_CODE, WEB_TOOL
from .rpc import BenchError, proc_status, spawn_server, time_command

logger = logging.getLogger(__name__)

OURS, THEIRS = "ours", "official"
PARALLEL_CALLS = 10
WARMUP_CALLS = 3
ONE_WRITE_FIRST_ID = 100_000  # ids of a one-write burst, built here: far above the session's own counter


@dataclass(frozen=True)
class SidePlan:
    """Repetitions of the side-by-side run."""

    startup_reps: int
    tools_list_reps: int
    call_samples: int
    parallel_runs: int


SIDE_FULL = SidePlan(startup_reps=10, tools_list_reps=10, call_samples=40, parallel_runs=5)


@dataclass
class ServerFigures:
    """One server's figures (seconds, bytes, kB): what the side-by-side table compares."""

    name: str
    startup: list[float] = field(default_factory=list)
    tools_list_bytes: int = 0
    tools_list: list[float] = field(default_factory=list)
    miss: list[float] = field(default_factory=list)
    repeat: list[float] = field(default_factory=list)  # ours: a cache hit; official: no cache, another request
    parallel: list[float] = field(default_factory=list)
    hwm_kb: int = 0
    calls: int = 0


@dataclass
class SideBySide:
    """Both servers' figures and the SDK floor, from one run; ``theirs`` is None when skipped."""

    ours: ServerFigures
    theirs: ServerFigures | None
    floor: list[float] = field(default_factory=list)
    skipped: str | None = None
    official_version: str | None = None
    fake_web_requests: int = 0  # web searches the one fake answered during the session part


@dataclass(frozen=True)
class Contender:
    """How to start one server, name it in its handshake, and shape a call of its tool (a web search) for it."""

    name: str
    server_name: str
    argv: list[str] | None
    env: dict[str, str]
    cwd: Path | None
    arguments: Callable[[str], dict[str, Any]]
    tool: str = WEB_TOOL


def our_arguments(query: str) -> dict[str, Any]:
    """Ten web results for ``query`` from our ``brave_web_search``."""
    return {"query": query, "max_results": 10, "result_filter": ["web"]}


def query_only(query: str) -> dict[str, Any]:
    """Just the query: the floors' trivial tool, and ours at its defaults."""
    return {"query": query}


def official_arguments(query: str) -> dict[str, Any]:
    """The same request to the official ``brave_web_search`` (Brave's ``count``; same upstream page)."""
    return {"query": query, "count": 10, "result_filter": ["web"]}


def contenders(base_url: str, official: OfficialServer | None) -> list[Contender]:
    """Ours, and the official server when installed, both pointed at the fake at ``base_url``."""
    found = [Contender(OURS, "brave-search", None, server_env(base_url, for_tests=False), None, our_arguments)]
    if official is not None:
        env = official_env(base_url, VALID_KEY)
        found.append(Contender(THEIRS, OFFICIAL_NAME, official.command(), env, official.cache_dir, official_arguments))
    return found


@asynccontextmanager
async def started(contender: Contender) -> AsyncIterator[RpcSession]:
    """A running, initialized server."""
    async with spawn_server(contender.env, argv=contender.argv, cwd=contender.cwd) as session:
        await session.initialize(contender.server_name)
        yield session


def _check_ok(result: Mapping[str, Any], who: str, tool: str = WEB_TOOL) -> None:
    if result.get("isError") or not text_of(result):
        what = "web search" if tool == WEB_TOOL else f"{tool} call"
        raise BenchError(f"{who}: {what} failed: {text_of(result)[:300]}")


async def timed_call(
    session: RpcSession,
    contender: Contender,
    query: str,
    upstream: FakeBraveServer | None = None,
    *,
    expect_request: bool | None = None,
) -> float:
    """One call of the contender's tool; its round trip.

    With ``expect_request`` set, checks the fake saw (True) or did not see (False) a web search for it, so a
    redirect that failed is loud; None skips that check (a server with no fake behind it, such as a floor).
    """
    watched = upstream if expect_request is not None else None
    if expect_request is not None and watched is None:
        raise ValueError("expect_request needs the upstream to count on")
    before = watched.fake.hits(WEB_PATH) if watched else 0
    result, elapsed = await session.call_tool(contender.tool, contender.arguments(query))
    _check_ok(result, contender.name, contender.tool)
    if watched is None:
        return elapsed
    sent = watched.fake.hits(WEB_PATH) - before
    if expect_request is True and sent != 1:
        raise BenchError(f"{contender.name}: a web search reached the fake {sent} times, not once (redirect broken?)")
    if expect_request is False and sent != 0:
        raise BenchError(f"{contender.name}: a repeated search reached the fake ({sent} requests): no cache hit")
    return elapsed


async def parallel_wall(
    session: RpcSession,
    arguments: Callable[[str], Mapping[str, Any]],
    label: str,
    *,
    tool: str = WEB_TOOL,
    calls: int = PARALLEL_CALLS,
    one_write: bool = False,
    check: str | None = None,
) -> tuple[list[Timed], float]:
    """``calls`` distinct ``tool`` calls (on ``arguments("<label> <n>")``) written back to back; their replies
    and the seconds from the first write to the last answer.

    One pipe write per request line, each sent as it is built (``RpcSession.request``); with ``one_write``
    every line in a single pipe write, as a raw-pipe client sends them (the lines are built before the clock
    starts). ``check`` names the server: then every reply must be a successful tool result with text.
    """
    if one_write:
        ids = [ONE_WRITE_FIRST_ID + n for n in range(calls)]
        lines = [
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                        "params": {"name": tool, "arguments": arguments(f"{label} {n}")}}).encode() + b"\n"
            for n, request_id in enumerate(ids)
        ]  # fmt: skip
        begin = time.perf_counter()
        await session.send_raw(b"".join(lines))
    else:
        begin = time.perf_counter()
        ids = [
            await session.request("tools/call", {"name": tool, "arguments": arguments(f"{label} {n}")})
            for n in range(calls)
        ]
    replies = [await session.receive(request_id) for request_id in ids]
    if check is not None:
        for reply in replies:
            result = reply.message.get("result")
            if not isinstance(result, dict):
                raise BenchError(f"{check}: parallel call failed: {str(reply.message)[:300]}")
            _check_ok(result, check, tool)
    return replies, max(reply.arrived for reply in replies) - begin


async def measure_startups(people: list[Contender], figures: dict[str, ServerFigures], reps: int) -> list[float]:
    """Spawn → ``initialize`` of each server beside the SDK floor, one warm-up each, order rotating."""
    floor: list[float] = []
    floor_env = people[0].env

    async def once(contender: Contender) -> float:
        async with spawn_server(contender.env, argv=contender.argv, cwd=contender.cwd) as session:
            return await session.initialize(contender.server_name)

    def step_for(contender: Contender) -> tuple[list[float], Callable[[], Awaitable[float]]]:
        return figures[contender.name].startup, lambda: once(contender)

    steps = [step_for(c) for c in people]
    steps.append((floor, lambda: time_command([sys.executable, "-c", FLOOR_CODE], floor_env)))
    for _, step in steps:
        await step()
    for rep in range(reps):
        for offset in range(len(steps)):
            samples, step = steps[(rep + offset) % len(steps)]
            samples.append(await step())
        logger.info(
            "side-by-side start-up %d/%d: %s",
            rep + 1,
            reps,
            ", ".join(f"{c.name} {figures[c.name].startup[-1]:.3f} s" for c in people) + f", floor {floor[-1]:.3f} s",
        )
    return floor


async def measure_sessions(
    people: list[Contender], figures: dict[str, ServerFigures], upstream: FakeBraveServer, plan: SidePlan
) -> int:
    """tools/list, misses, repeats and parallel bursts on one long-lived session per server, interleaved."""
    async with AsyncExitStack() as stack:
        sessions = {c.name: await stack.enter_async_context(started(c)) for c in people}
        requests_before = upstream.fake.hits(WEB_PATH)
        for _ in range(plan.tools_list_reps):
            for contender in people:
                result, elapsed = await sessions[contender.name].round_trip("tools/list")
                figures[contender.name].tools_list.append(elapsed)
                figures[contender.name].tools_list_bytes = tools_bytes(result)
        for contender in people:
            for n in range(WARMUP_CALLS):
                await timed_call(sessions[contender.name], contender, f"warm-up {n}", upstream, expect_request=True)
        for sample in range(plan.call_samples):
            order = people if sample % 2 == 0 else people[::-1]
            for contender in order:
                session, fig = sessions[contender.name], figures[contender.name]
                query = f"side sample {sample}"
                fig.miss.append(await timed_call(session, contender, query, upstream, expect_request=True))
                # Ours must not reach the fake on a repeat; the official server has no cache and must.
                again = contender.name != OURS
                fig.repeat.append(await timed_call(session, contender, query, upstream, expect_request=again))
        for run in range(plan.parallel_runs):
            for contender in people if run % 2 == 0 else people[::-1]:
                session = sessions[contender.name]
                _, wall = await parallel_wall(session, contender.arguments, f"parallel {run}", check=contender.name)
                figures[contender.name].parallel.append(wall)
        for contender in people:
            fig = figures[contender.name]
            fig.calls = WARMUP_CALLS + 2 * plan.call_samples + PARALLEL_CALLS * plan.parallel_runs
            status = proc_status(sessions[contender.name].pid)
            if "VmHWM" not in status:
                raise BenchError(f"{contender.name}: /proc/<pid>/status has no VmHWM line")
            fig.hwm_kb = status["VmHWM"]
        total = upstream.fake.hits(WEB_PATH) - requests_before
        logger.info("side-by-side: the fake answered %d web searches", total)
        return total


def tools_bytes(result: Mapping[str, Any]) -> int:
    """Bytes of the ``tools`` array as compact UTF-8 JSON (what a host re-sends to the model)."""
    tools = result.get("tools")
    if not isinstance(tools, list) or not tools:
        raise BenchError("tools/list returned no tools")
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode())


async def run_side_by_side(upstream: FakeBraveServer, official: OfficialServer | str, plan: SidePlan) -> SideBySide:
    """Every side-by-side figure; the official half is skipped (with its reason) when it is not installed."""
    installed = official if isinstance(official, OfficialServer) else None
    people = contenders(upstream.base_url, installed)
    figures = {c.name: ServerFigures(c.name) for c in people}
    floor = await measure_startups(people, figures, plan.startup_reps)
    requests = await measure_sessions(people, figures, upstream, plan)
    return SideBySide(
        ours=figures[OURS],
        theirs=figures.get(THEIRS),
        floor=floor,
        skipped=None if installed else str(official),
        official_version=installed.version if installed else None,
        fake_web_requests=requests,
    )
