"""``python -m bench.http_transport``: the HTTP transport's cost per call, and whether 200 parallel calls succeed.

The server runs as a real process (``testkit.http_launcher``) in front of the fake Brave served on 127.0.0.1, and
the SDK's streamable HTTP client drives it with a bearer token, as a remote agent host would. Results are printed,
not written: ``bench/report.py`` owns the benchmark document.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from testkit.brave.http_server import FakeBraveServer

from .machine import describe_machine, render_machine_line
from .stats import Summary, summarize
from .upstream import REPO_ROOT

TOKEN = "bench-http-token-not-a-secret"
START_SECONDS = 30.0
CALL_SECONDS = 60.0


@dataclass(frozen=True)
class HttpBench:
    """One run's numbers, in seconds."""

    ping: Summary
    miss: Summary
    hit: Summary
    concurrent: int
    concurrent_errors: int
    concurrent_wall: float
    concurrent_latency: Summary


@asynccontextmanager
async def http_server(brave_url: str) -> AsyncIterator[str]:
    """Start the real HTTP server process; yield its /mcp URL; stop it with SIGTERM (bounded), then kill."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(REPO_ROOT),
        "BRAVE_SEARCH_HTTP_TOKEN": TOKEN,
    }
    command = [sys.executable, "-m", "testkit.http_launcher", "--brave-url", brave_url]
    process: Process = await anyio.open_process(command, env=env, cwd=REPO_ROOT, stderr=None)
    try:
        assert process.stdout is not None
        with anyio.fail_after(START_SECONDS):
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 256)
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(5):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _timed(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[float, bool]:
    start = time.perf_counter()
    with anyio.fail_after(CALL_SECONDS):
        result = await client.call_tool(tool, arguments)
    return time.perf_counter() - start, bool(result.is_error)


async def run(calls: int, concurrency: int) -> HttpBench:
    """Sequential latencies (ping, cache miss, cache hit), then ``concurrency`` calls at once."""
    with FakeBraveServer(rate_per_second=100_000, monthly_limit=0) as fake:
        async with (
            http_server(fake.base_url) as url,
            httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=CALL_SECONDS) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            await client.call_tool("brave_web_search", {"query": "warm up"})
            pings: list[float] = []
            for _ in range(calls):
                start = time.perf_counter()
                await client.send_ping()
                pings.append(time.perf_counter() - start)
            misses = [await _timed(client, "brave_web_search", {"query": f"miss {i}"}) for i in range(calls)]
            hits = [await _timed(client, "brave_web_search", {"query": "warm up"}) for _ in range(calls)]
            outcomes: list[tuple[float, bool]] = []
            failures: list[BaseException] = []

            async def one(i: int) -> None:
                try:
                    outcomes.append(await _timed(client, "brave_web_search", {"query": f"parallel {i}"}))
                except Exception as exc:  # counted, not raised: the bench reports the error count
                    failures.append(exc)

            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for i in range(concurrency):
                    tg.start_soon(one, i)
            wall = time.perf_counter() - start
    errors = len(failures) + sum(1 for _, is_error in outcomes if is_error)
    return HttpBench(
        ping=summarize(pings),
        miss=summarize([t for t, _ in misses]),
        hit=summarize([t for t, _ in hits]),
        concurrent=concurrency,
        concurrent_errors=errors,
        concurrent_wall=wall,
        concurrent_latency=summarize([t for t, _ in outcomes] or [0.0]),
    )


def render(result: HttpBench) -> str:
    """Plain-text lines for the terminal."""

    def ms(summary: Summary) -> str:
        s = summary.scaled(1000)
        return f"median {s.median:.2f} ms (p10 {s.p10:.2f}, p90 {s.p90:.2f}, n={s.n})"

    return "\n".join(
        [
            "HTTP transport (real server process, SDK streamable HTTP client, bearer token, fake Brave on 127.0.0.1)",
            f"  ping round trip:                 {ms(result.ping)}",
            f"  brave_web_search, cache miss:    {ms(result.miss)}",
            f"  brave_web_search, cache hit:     {ms(result.hit)}",
            f"  {result.concurrent} concurrent calls:           errors {result.concurrent_errors}, "
            f"wall {result.concurrent_wall * 1000:.0f} ms, per call {ms(result.concurrent_latency)}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench and print it; exit 1 when any concurrent call failed."""
    parser = argparse.ArgumentParser(prog="python -m bench.http_transport", description=__doc__)
    parser.add_argument("--calls", type=int, default=50, help="sequential calls per latency sample")
    parser.add_argument("--concurrency", type=int, default=200, help="calls started at once")
    args = parser.parse_args(argv)
    result = anyio.run(run, max(1, args.calls), max(1, args.concurrency))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    sys.stdout.write(f"{render_machine_line(describe_machine())}; load average {load}\n{render(result)}\n")
    return 1 if result.concurrent_errors else 0


if __name__ == "__main__":
    sys.exit(main())
