"""``python -m bench.state_backends``: issue 14 item 4 figures for the memory, sqlite and redis state backends.

Real subprocesses (testkit.state_worker) against a local fake Brave; each call is the state layer's
limiter (and cache) followed by one HTTP request, called directly: the client is wired to the state
interface separately, so these figures measure the state backends, not the whole server.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from brave_search_mcp.state.location import open_state
from testkit.brave.http_server import FakeBraveServer
from testkit.redis_server import RedisServer, redis_server_binary
from testkit.state_worker import run_workers

from .tables import table

PROCESSES = 8
CALLS_PER_PROCESS = 5


def _rate_plan(url: str, processes: int, calls: int) -> dict[str, Any]:
    """N processes x M calls on a 1-rps plan: how many succeed, how many drew a 429 upstream."""
    with FakeBraveServer(rate_per_second=1) as server:
        args = ["--url", url, "--mode", "acquire", "--count", str(calls), "--rate", "1", "--burst", "1"]
        started = time.monotonic()
        results = run_workers(processes, *args, "--upstream", server.base_url, timeout=processes * calls * 3 + 30)
        elapsed = time.monotonic() - started
        statuses = [s for r in results for s in r["statuses"]]
        return {"ok": statuses.count(200), "total": processes * calls, "429": statuses.count(429), "seconds": elapsed}


def _same_query(url: str, processes: int) -> int:
    """N processes asking one query at the same moment: upstream requests made."""
    with FakeBraveServer(rate_per_second=1000) as server:
        run_workers(processes, "--url", url, "--mode", "fetch", "--query", "bench same", "--upstream", server.base_url)
        return server.fake.hits()


async def _timed(op: Callable[[], Awaitable[Any]], n: int) -> float:
    """Median milliseconds of ``op`` over ``n`` runs."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await op()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


async def _latency(url: str) -> dict[str, float]:
    """In-process cost of one granted acquire and one cache hit on this backend."""
    backend = await open_state(url, cache_max_entries=1000)
    try:
        limiter = backend.limiter("bench", rate=10_000.0, burst=50)  # a free slot every time: pure state cost

        async def value() -> bytes:
            return b"x" * 20_000

        await backend.cache.get_or_fetch("bench?q=hit", value, 600.0)
        acquire = await _timed(limiter.acquire, 200)
        hit = await _timed(lambda: backend.cache.get_or_fetch("bench?q=hit", value, 600.0), 200)
        return {"acquire_ms": acquire, "hit_ms": hit}
    finally:
        await backend.aclose()


def _row(name: str, url: str, processes: int, calls: int) -> dict[str, Any]:
    print(f"[{name}] {processes} processes x {calls} calls on a 1-rps plan ...", file=sys.stderr, flush=True)
    plan = _rate_plan(url, processes, calls)
    print(f"[{name}] {processes} processes, same query ...", file=sys.stderr, flush=True)
    same = _same_query(url, processes)
    lat = anyio.run(_latency, url)
    return {"backend": name, **plan, "upstream_same": same, **lat}


def main(argv: Sequence[str] | None = None) -> int:
    """Run every backend and print one table (exit 0 whenever the bench ran)."""
    parser = argparse.ArgumentParser(prog="python -m bench.state_backends", description=__doc__)
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--calls", type=int, default=CALLS_PER_PROCESS)
    parser.add_argument("--backends", default="memory,sqlite,redis")
    args = parser.parse_args(argv)
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in wanted:
            if name == "memory":
                rows.append(_row("memory", "memory", args.processes, args.calls))
            elif name == "sqlite":
                rows.append(_row("sqlite", f"sqlite://{Path(tmp) / 'state.sqlite3'}", args.processes, args.calls))
            elif name == "redis":
                if redis_server_binary() is None:
                    skipped.append("redis (redis-server not installed)")
                    continue
                with RedisServer() as server:
                    rows.append(_row("redis", server.url, args.processes, args.calls))
            else:
                parser.error(f"unknown backend {name!r}")
    p, c = args.processes, args.calls
    print("State backends (issue 14 item 4): the state layer's limiter + cache called directly from real processes")
    print("against a local fake Brave; the client is not in the loop. Latency is the median in-process cost.")
    print()
    header = (
        "backend", f"{p}x{c} calls on 1 rps: ok", "upstream 429", "wall s", f"{p} procs same query: upstream requests",
        "acquire ms", "cache hit ms",
    )  # fmt: skip
    cells = [
        (r["backend"], f"{r['ok']}/{r['total']}", r["429"], f"{r['seconds']:.1f}", r["upstream_same"],
         f"{r['acquire_ms']:.3f}", f"{r['hit_ms']:.3f}")
        for r in rows
    ]  # fmt: skip
    print(table(header, cells), end="")
    base = next((r for r in rows if r["backend"] == "memory"), None)
    if base is not None:
        for r in rows:
            if r is not base:
                added = r["acquire_ms"] - base["acquire_ms"]
                print(
                    f"\n{r['backend']}: added latency per call vs memory: acquire +{added:.3f} ms "
                    f"(target <= 1 ms), cache hit +{r['hit_ms'] - base['hit_ms']:.3f} ms"
                )
    for s in skipped:
        print(f"\nskipped: {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
