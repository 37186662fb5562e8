"""Bench results built by hand for the tests of the bench's pure parts: the figures, a machine, a whole run."""

from __future__ import annotations

from typing import Any

from bench.hotspots import HitProfile, HotSpot
from bench.machine import Machine
from bench.results import (
    QUICK_PLAN,
    BurstRun,
    ImportProfile,
    LatencyResult,
    MemoryResult,
    Results,
    StartupResult,
    TextResult,
    ToolsListResult,
)

MS = 0.001


def text_result(**overrides: Any) -> TextResult:
    values: dict[str, Any] = {
        "source": "recorded",
        "text_bytes": 2960,
        "structured_bytes": 4000,
        "results": 10,
        "ages_expected": 9,
        "ages_shown": 9,
        "markup": [],
        "text": "",
    }
    values.update(overrides)
    return TextResult(**values)


def burst_run(ok: int = 10, limited: int = 0, wall: float = 9.3) -> BurstRun:
    return BurstRun(calls=10, ok=ok, rate_limited=limited, upstream_requests=10, wall=wall)


def bench_results(*, hit_ms: float = 0.5, miss_ms: float = 3.0, upstream_ms: float = 1.0) -> Results:
    n = 5
    return Results(
        plan=QUICK_PLAN,
        quick=True,
        startup=StartupResult(server=[1.0] * 3, floor=[0.96] * 3, floor_import=[0.8] * 3),
        tools_list=ToolsListResult(total_bytes=4900, per_tool={"brave_web_search": 2600, "brave_summarizer": 2300}),
        text=text_result(),
        latency=LatencyResult(
            miss_rtt=[miss_ms * MS] * n,
            hit_rtt=[(hit_ms + 1.0) * MS] * n,
            upstream=[upstream_ms * MS] * n,
            miss_inside=[(miss_ms - 1.0) * MS] * n,
            hit_inside=[hit_ms * MS] * n,
        ),
        slow_bursts=[burst_run()],
        fast_bursts=[burst_run(wall=0.05)],
        memory=MemoryResult(calls=200, hits=100, misses=100, hwm_after_init_kb=70_000, hwm_kb=76_800, rss_kb=76_000),
        profile=ImportProfile(
            runs=1, floor_total_ms=900, server_total_ms=1000, extra_total_ms=100, top_extra=[("x.y", 20.0)]
        ),
        hit_profile=HitProfile(
            calls=5,
            per_call_ms=0.6,
            spots=[HotSpot("brave_search_mcp/formatting.py:clean_text", 0.4, 200.0)],
            by_file=[HotSpot("brave_search_mcp/formatting.py", 0.6, 300.0)],
        ),
        elapsed=12.0,
    )


def a_machine() -> Machine:
    return Machine(
        date="2026-01-01 00:00 UTC",
        cpu_model="Test CPU",
        logical_cpus=4,
        physical_cores=2,
        ram_bytes=8 * 1024**3,
        os="Linux",
        python="CPython 3.11.7",
        packages={"mcp": "2.3.0"},
    )
