"""Memory after a real workload: 1,000 cached calls pipelined on one stdio session, then the peak resident set.

The requests are written while the answers are read (1,000 lines would fill the pipes otherwise); calls per
second come along for free.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from testkit.brave.brave import WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, Timed

from .rpc import BenchError, proc_status, spawn_server
from .servers import WEB_TOOL, text_of

PIPELINE_CALLS = 1000
DISTINCT_QUERIES = 10  # warmed first, then every pipelined call is a cache hit on one of them


@dataclass(frozen=True)
class PipelineResult:
    """Wall time of the pipelined calls and the server's memory before and after (kB)."""

    calls: int
    wall: float
    upstream_requests: int
    hwm_after_init_kb: int
    hwm_kb: int
    rss_kb: int

    @property
    def calls_per_second(self) -> float:
        """Answered calls per second of wall time."""
        return self.calls / self.wall if self.wall > 0 else float("inf")


def pipeline_arguments(n: int) -> dict[str, Any]:
    """The n-th call's arguments: one of a few warmed queries, 10 web results each."""
    return {"query": f"pipeline query {n % DISTINCT_QUERIES}", "max_results": 10, "result_filter": ["web"]}


def check_replies(replies: list[Timed]) -> None:
    """Every reply is a successful tool result served from the cache."""
    for reply in replies:
        result = reply.message.get("result")
        if not isinstance(result, Mapping) or result.get("isError"):
            raise BenchError(f"pipelined call failed: {str(reply.message)[:300]}")
        meta = (result.get("structuredContent") or {}).get("meta") or {}
        if meta.get("cached") is not True:
            raise BenchError(f"pipelined call missed the cache: {text_of(result)[:200]}")


async def pipelined(session: RpcSession, calls: int) -> tuple[float, list[Timed]]:
    """Write ``calls`` requests back to back while reading answers concurrently (no pipe can fill up)."""
    replies: list[Timed] = []
    send_ids, receive_ids = anyio.create_memory_object_stream[int](calls)

    async def write() -> None:
        async with send_ids:
            for n in range(calls):
                args = pipeline_arguments(n)
                await send_ids.send(await session.request("tools/call", {"name": WEB_TOOL, "arguments": args}))

    async def read() -> None:
        async with receive_ids:
            replies.extend([await session.receive(request_id) async for request_id in receive_ids])

    begin = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(write)
        group.start_soon(read)
    if len(replies) != calls:
        raise BenchError(f"{len(replies)} of {calls} pipelined calls answered")
    return max(reply.arrived for reply in replies) - begin, replies


async def measure_pipeline(
    env: Mapping[str, str], upstream: FakeBraveServer, calls: int = PIPELINE_CALLS
) -> PipelineResult:
    """A fresh server: warm the queries, pipeline ``calls`` cache hits, then read VmHWM/VmRSS."""
    async with spawn_server(env) as session:
        await session.initialize()
        at_init = proc_status(session.pid)
        for n in range(DISTINCT_QUERIES):
            result, _ = await session.call_tool(WEB_TOOL, pipeline_arguments(n))
            if result.get("isError"):
                raise BenchError(f"warm-up call failed: {text_of(result)[:300]}")
        before = upstream.fake.hits(WEB_PATH)
        wall, replies = await pipelined(session, calls)
        check_replies(replies)
        status = proc_status(session.pid)
        requests = upstream.fake.hits(WEB_PATH) - before
    if "VmHWM" not in status or "VmHWM" not in at_init:
        raise BenchError("/proc/<pid>/status has no VmHWM line")
    return PipelineResult(
        calls=calls,
        wall=wall,
        upstream_requests=requests,
        hwm_after_init_kb=at_init["VmHWM"],
        hwm_kb=status["VmHWM"],
        rss_kb=status.get("VmRSS", 0),
    )
