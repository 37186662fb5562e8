"""Each measurement the issue asks for, run against a real server subprocess and a local fake upstream."""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from testkit.brave.brave import FIXTURES_DIR, VALID_KEY, WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, server_env

from .hotspots import profile_hits
from .readings import find_markup, import_profile, parse_call_log, parse_importtime, source_ages, text_of
from .results import (
    BURST_CALLS,
    FAST_RATE,
    FLOOR_CODE,
    FLOOR_IMPORT_CODE,
    MEMORY_CALLS,
    TEXT_QUERY,
    WARMUP_CALLS,
    WEB_TOOL,
    BurstRun,
    ImportProfile,
    LatencyResult,
    MemoryResult,
    Plan,
    Results,
    StartupResult,
    TextResult,
    ToolsListResult,
)
from .rpc import BenchError, capture_stderr, proc_status, spawn_server, time_command, time_to_output
from .sidebyside import our_arguments, parallel_wall, query_only
from .upstream import DIRECT_KEY, DirectClient, load_recorded_page, make_fake

logger = logging.getLogger(__name__)


def _meta(result: Mapping[str, Any]) -> dict[str, Any]:
    if result.get("isError"):
        raise BenchError(f"tool call failed: {text_of(result)[:300]}")
    structured = result.get("structuredContent")
    if not isinstance(structured, dict) or not isinstance(structured.get("meta"), dict):
        raise BenchError("tool result has no structuredContent.meta")
    meta: dict[str, Any] = structured["meta"]
    return meta


# --------------------------------------------------------------------------------------------- measurements


async def measure_startup(env: Mapping[str, str], reps: int) -> StartupResult:
    """Server spawn-to-initialize beside the floor command, one warm-up each, measured in rotating order."""
    floor_argv = [sys.executable, "-c", FLOOR_CODE]
    import_argv = [sys.executable, "-c", FLOOR_IMPORT_CODE]

    async def server_once() -> float:
        async with spawn_server(env) as session:
            return await session.initialize()

    server: list[float] = []
    floor: list[float] = []
    floor_import: list[float] = []
    steps: list[tuple[list[float], Callable[[], Awaitable[float]]]] = [
        (floor, lambda: time_command(floor_argv, env)),
        (floor_import, lambda: time_to_output(import_argv, env)),
        (server, server_once),
    ]
    for _, step in steps:  # warm-up: page cache and .pyc files
        await step()
    for rep in range(reps):
        for offset in range(len(steps)):
            samples, step = steps[(rep + offset) % len(steps)]
            samples.append(await step())
        logger.info(
            "start-up %d/%d: server %.3f s, floor %.3f s (import only %.3f s)",
            rep + 1,
            reps,
            server[-1],
            floor[-1],
            floor_import[-1],
        )
    return StartupResult(server=server, floor=floor, floor_import=floor_import)


async def measure_tools_list(session: RpcSession) -> ToolsListResult:
    """Size of the ``tools`` array as the model's host receives it (compact UTF-8 JSON)."""
    result, _ = await session.round_trip("tools/list")
    tools = result.get("tools")
    if not isinstance(tools, list) or not tools:
        raise BenchError("tools/list returned no tools")

    def size(obj: Any) -> int:
        return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())

    return ToolsListResult(total_bytes=size(tools), per_tool={str(t.get("name")): size(t) for t in tools})


async def measure_text(session: RpcSession, page: Mapping[str, Any] | None) -> TextResult:
    """One 10-result web search (result_filter=web) and the bytes of text it puts in the model's context."""
    result, _ = await session.call_tool(WEB_TOOL, our_arguments(TEXT_QUERY))
    meta = _meta(result)
    text = text_of(result)
    if page is not None:
        source = (
            "project's hello-world page, sized like a recorded Brave answer "
            "(testkit/brave/fixtures/web_hello_world.json)"
        )
        source_results = page["web"]["results"][:10]
    else:
        source = "FALLBACK: the fake's own fixture (testkit/brave/fixtures/web.json); the recorded page was not found"
        fixture = json.loads((FIXTURES_DIR / "web.json").read_text(encoding="utf-8"))
        source_results = fixture["web"]["results"][:10]
    ages = source_ages(source_results)
    return TextResult(
        source=source,
        text_bytes=len(text.encode()),
        structured_bytes=len(json.dumps(result.get("structuredContent"), ensure_ascii=False).encode()),
        results=int(meta["returned"]),
        ages_expected=len(ages),
        ages_shown=sum(1 for age in ages if age in text),
        markup=find_markup(text),
        text=text,
    )


async def measure_latency(
    session: RpcSession, upstream: FakeBraveServer, samples: int, log_path: Path
) -> LatencyResult:
    """Interleaved per-sample: a miss through the server, the same GET direct to the fake, then a hit.

    The server writes each call's log line before its response, so ``log_path`` (its stderr) already
    holds every ``duration_ms`` when the last response has arrived.
    """
    direct = DirectClient(upstream.base_url)
    miss_ids: list[str] = []
    hit_ids: list[str] = []
    miss_rtt: list[float] = []
    hit_rtt: list[float] = []
    direct_rtt: list[float] = []
    try:
        for i in range(WARMUP_CALLS):
            for _ in range(2):
                await session.call_tool(WEB_TOOL, our_arguments(f"warm-up {i}"))
        for i in range(samples):
            args = our_arguments(f"latency sample {i}")
            result, elapsed = await session.call_tool(WEB_TOOL, args)
            meta = _meta(result)
            if meta["cached"]:
                raise BenchError(f"latency sample {i}: the first call was served from the cache")
            sent = upstream.fake.requests[-1]
            if not sent.path.endswith(WEB_PATH):
                raise BenchError(f"latency sample {i}: unexpected upstream path {sent.path}")
            miss_ids.append(str(meta["trace_id"]))
            miss_rtt.append(elapsed)
            direct_rtt.append(await anyio.to_thread.run_sync(direct.get, sent.path, sent.params))
            result, elapsed = await session.call_tool(WEB_TOOL, args)
            meta = _meta(result)
            if not meta["cached"]:
                raise BenchError(f"latency sample {i}: the repeated call missed the cache")
            hit_ids.append(str(meta["trace_id"]))
            hit_rtt.append(elapsed)
    finally:
        direct.close()
    calls = parse_call_log(await anyio.Path(log_path).read_text(encoding="utf-8"))
    missing = [trace_id for trace_id in miss_ids + hit_ids if trace_id not in calls]
    if missing:
        raise BenchError(f"{len(missing)} calls have no log line on stderr (e.g. trace_id {missing[0]})")
    return LatencyResult(
        miss_rtt=miss_rtt,
        hit_rtt=hit_rtt,
        upstream=direct_rtt,
        miss_inside=[calls[t].duration_ms / 1000 for t in miss_ids],
        hit_inside=[calls[t].duration_ms / 1000 for t in hit_ids],
    )


async def measure_memory(env: Mapping[str, str]) -> MemoryResult:
    """A fresh server, 200 calls alternating miss and hit, then VmHWM from /proc/<pid>/status."""
    async with spawn_server(env) as session:
        await session.initialize()
        at_init = proc_status(session.pid)
        hits = misses = 0
        for i in range(MEMORY_CALLS):
            result, _ = await session.call_tool(WEB_TOOL, our_arguments(f"memory query {i // 2}"))
            if _meta(result)["cached"]:
                hits += 1
            else:
                misses += 1
        status = proc_status(session.pid)
    if "VmHWM" not in status or "VmHWM" not in at_init:
        raise BenchError("/proc/<pid>/status has no VmHWM line")
    return MemoryResult(
        calls=MEMORY_CALLS,
        hits=hits,
        misses=misses,
        hwm_after_init_kb=at_init["VmHWM"],
        hwm_kb=status["VmHWM"],
        rss_kb=status.get("VmRSS", 0),
    )


async def measure_burst(rate: int, *, teach: bool, label: str) -> BurstRun:
    """Ten concurrent distinct searches from a fresh server against an upstream allowing ``rate`` requests/s."""
    with FakeBraveServer(rate_per_second=rate, monthly_limit=0) as upstream:
        async with spawn_server(server_env(upstream.base_url, for_tests=False)) as session:
            await session.initialize()
            if teach:
                _meta((await session.call_tool(WEB_TOOL, {"query": f"{label} teaches the rate"}))[0])
            limited_before = upstream.fake.rate_limited_count
            requests_before = upstream.fake.hits(WEB_PATH)
            replies, wall = await parallel_wall(session, query_only, f"{label} call", calls=BURST_CALLS)
        ok = sum(1 for reply in replies if not reply.message.get("result", {}).get("isError", True))
        return BurstRun(
            calls=BURST_CALLS,
            ok=ok,
            rate_limited=upstream.fake.rate_limited_count - limited_before,
            upstream_requests=upstream.fake.hits(WEB_PATH) - requests_before,
            wall=wall,
        )


async def measure_import_profile(env: Mapping[str, str], runs: int, work_dir: Path) -> ImportProfile:
    """``python -X importtime`` of the floor command and of the real server up to ``initialize``."""
    floor_runs: list[dict[str, int]] = []
    server_runs: list[dict[str, int]] = []
    for run in range(runs):
        floor_text = await capture_stderr([sys.executable, "-X", "importtime", "-c", FLOOR_CODE], env)
        floor_runs.append(parse_importtime(floor_text))
        log = work_dir / f"importtime-{run}.log"
        async with spawn_server(env, stderr_path=log, python_flags=("-X", "importtime")) as session:
            await session.initialize()
        server_runs.append(parse_importtime(await anyio.Path(log).read_text(encoding="utf-8")))
    return import_profile(floor_runs, server_runs)


# --------------------------------------------------------------------------------------------- the whole run


async def run_all(plan: Plan, *, quick: bool) -> Results:
    """Every measurement in turn; servers and subprocesses are stopped even when one fails."""
    started = time.perf_counter()
    results = Results(plan=plan, quick=quick)
    page = load_recorded_page()
    if page is None:
        logger.warning("recorded page not found; text size is measured on the fake's own fixture")
    with tempfile.TemporaryDirectory(prefix="brave-bench-") as tmp:
        work_dir = Path(tmp)
        fake = make_fake(page, rate_per_second=FAST_RATE, keys=(VALID_KEY, DIRECT_KEY))
        with FakeBraveServer(fake) as upstream:
            env = server_env(upstream.base_url, for_tests=False)
            logger.info("measuring start-up (%d reps)", plan.startup_reps)
            results.startup = await measure_startup(env, plan.startup_reps)
            logger.info("measuring import time (%d runs)", plan.profile_runs)
            results.profile = await measure_import_profile(env, plan.profile_runs, work_dir)
            log_path = work_dir / "latency-server.log"
            logger.info("measuring tools/list, text size and latency (%d samples)", plan.latency_samples)
            async with spawn_server(env, stderr_path=log_path) as session:
                await session.initialize()
                results.tools_list = await measure_tools_list(session)
                results.text = await measure_text(session, page)
                results.latency = await measure_latency(session, upstream, plan.latency_samples, log_path)
            logger.info("profiling cache hits in-process (%d calls)", plan.latency_samples)
            results.hit_profile = await profile_hits(page, our_arguments(TEXT_QUERY), WEB_TOOL, plan.latency_samples)
            logger.info("measuring memory (%d calls)", MEMORY_CALLS)
            results.memory = await measure_memory(env)
        for run in range(plan.fast_bursts):
            logger.info("burst at 20 rps, run %d/%d", run + 1, plan.fast_bursts)
            results.fast_bursts.append(await measure_burst(20, teach=True, label=f"fast burst {run}"))
        for run in range(plan.slow_bursts):
            logger.info("burst at 1 rps, run %d/%d (about 9 s)", run + 1, plan.slow_bursts)
            results.slow_bursts.append(await measure_burst(1, teach=False, label=f"slow burst {run}"))
    results.elapsed = time.perf_counter() - started
    return results
