"""Issue 11's figures: a long throttle queue fails fast instead of timing out, and a lying plan costs few 429s.

Both run the real client and tool boundary in-process against the real local fake Brave (real sockets,
real time), because what is measured is how calls end in wall-clock time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio

from brave_search_mcp.compose import build_tools, open_client
from brave_search_mcp.config import Settings
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

from .tables import table


@dataclass(frozen=True)
class QueueResult:
    """200 calls at once on a 1-rps plan with a 10 s deadline."""

    calls: int
    succeeded: int
    failed_fast: int  # RATE_LIMITED within 0.5 s
    slowest_refusal_s: float
    timeouts: int
    other: int


@dataclass(frozen=True)
class LyingPlanResult:
    """50 calls at once when the plan header says 20/s but the upstream allows 5/s."""

    calls: int
    succeeded: int
    upstream_429: int
    rate_in_force: float
    seconds: float


def _settings(base_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "api_key": VALID_KEY,
        "base_url": base_url,
        "state": "memory",
        "retry_base_ms": 5,
        "retry_max_ms": 50,
    }
    values.update(overrides)
    return Settings(**values)


async def queue_fail_fast(calls: int = 200, deadline: float = 10.0) -> QueueResult:
    """Every call ends by its deadline: the ones that cannot start in time are refused at once."""
    outcomes: list[tuple[str, float]] = []
    with FakeBraveServer(rate_per_second=1) as upstream:
        settings = _settings(upstream.base_url, call_deadline_seconds=deadline, rate_limit=1.0, burst=1)
        async with open_client(settings) as client:
            tools = build_tools(settings, client)

            async def one(n: int) -> None:
                started = time.perf_counter()
                outcome = await tools.call("brave_web_search", {"query": f"queued call {n}"})
                code = outcome.structured["error"]["code"] if outcome.is_error else "ok"
                outcomes.append((code, time.perf_counter() - started))

            async with anyio.create_task_group() as tg:
                for n in range(calls):
                    tg.start_soon(one, n)
    refusals = [t for code, t in outcomes if code == "RATE_LIMITED"]
    return QueueResult(
        calls=calls,
        succeeded=sum(code == "ok" for code, _ in outcomes),
        failed_fast=sum(t < 0.5 for t in refusals),
        slowest_refusal_s=max(refusals, default=0.0),
        timeouts=sum(code == "TIMEOUT" for code, _ in outcomes),
        other=sum(code not in ("ok", "RATE_LIMITED", "TIMEOUT") for code, _ in outcomes),
    )


async def lying_plan(calls: int = 50) -> LyingPlanResult:
    """A fresh key: one probe, then the advertised 20/s spread evenly, halving on the 429s that contradict it."""
    started = time.perf_counter()
    with FakeBraveServer(rate_per_second=5) as upstream:
        upstream.fake.advertised_rate_per_second = 20
        settings = _settings(upstream.base_url, call_deadline_seconds=120.0, retries=5)
        async with open_client(settings) as client:
            tools = build_tools(settings, client)
            ok: list[bool] = []

            async def one(n: int) -> None:
                outcome = await tools.call("brave_web_search", {"query": f"lying plan {n}"})
                ok.append(not outcome.is_error)

            async with anyio.create_task_group() as tg:
                for n in range(calls):
                    tg.start_soon(one, n)
            rate = float((await client.admission())["rate_in_force_per_second"])
        refused = upstream.fake.rate_limited_count
    return LyingPlanResult(calls, sum(ok), refused, rate, time.perf_counter() - started)


def render_limits(queue: QueueResult, lying: LyingPlanResult) -> str:
    """The Markdown section for docs/benchmarks.md."""
    return (
        "## Rate limits and deadlines (issue 11)\n\n"
        "`python -m bench` (real client and tool boundary, in-process, real sockets and real time against the "
        "local fake Brave):\n\n"
    ) + table(
        ("scenario", "figure", "target"),
        [
            (
                f"{queue.calls} concurrent calls, 1-rps plan, 10 s deadline",
                f"{queue.succeeded} succeeded, {queue.failed_fast} refused as RATE_LIMITED within 0.5 s (slowest "
                f"refusal {queue.slowest_refusal_s:.3f} s), {queue.timeouts} TIMEOUT, {queue.other} other",
                "about 10 succeed, the rest fail fast, 0 TIMEOUT",
            ),
            (
                f"{lying.calls} concurrent calls, plan header 20/s, upstream allows 5/s",
                f"{lying.succeeded}/{lying.calls} succeeded, {lying.upstream_429} upstream 429s, rate in force "
                f"afterwards {lying.rate_in_force:g}/s, {lying.seconds:.1f} s",
                "all succeed, at most 5 upstream 429s",
            ),
        ],
    )


async def run_limits() -> str:
    """Both scenarios, rendered."""
    return render_limits(await queue_fail_fast(), await lying_plan())


if __name__ == "__main__":
    print(anyio.run(run_limits))
