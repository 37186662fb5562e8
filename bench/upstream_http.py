"""``python -m bench.upstream_http``: CPU per Brave GET on httpx2's own transport against ours (``upstream/keepalive``).

One fake Brave (the recorded 10-result page, gzip, real HTTP on 127.0.0.1) runs in a process of its own, so this
process's CPU time is the client's alone. Each way of sending runs ``REQUESTS`` GETs one at a time and ``ROUNDS``
rounds of 10 at once, every body read whole as the client reads it (raw gzip bytes, no decoding); the ways rotate
over ``PASSES`` passes and each figure is the median pass. Printed as a Markdown section (``bench/__main__.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import httpx2

from brave_search_mcp.upstream.get_requests import GetRequests
from brave_search_mcp.upstream.keepalive import KeepAliveTransport, Reply
from testkit.brave.brave import VALID_KEY

from .tables import table
from .upstream import REPO_ROOT

REQUESTS, ROUNDS, PASSES, AT_ONCE = 1000, 100, 3, 10
SERVE = """
import sys
from bench.upstream import load_recorded_page, make_fake
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
with FakeBraveServer(make_fake(load_recorded_page(), rate_per_second=1_000_000, keys=(VALID_KEY,))) as up:
    print(up.base_url, flush=True)
    sys.stdin.read()
"""
HEADERS = {"X-Subscription-Token": VALID_KEY, "Accept": "application/json", "Accept-Encoding": "gzip"}
Send = Callable[[str], Awaitable[int]]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _read(response: Reply | httpx2.Response) -> int:
    try:
        return sum([len(chunk) async for chunk in response.aiter_raw()])
    finally:
        await response.aclose()


def _ways() -> dict[str, tuple[Callable[[], httpx2.AsyncBaseTransport], bool]]:
    """Each way: its transport, and whether GETs are sent as ``BraveClient`` sends them (``GetRequests``: the head
    from bytes, the answer read as a ``Reply``) or through ``AsyncClient.send``."""
    return {
        "httpx2's transport (httpcore2, h11), through AsyncClient.send": (httpx2.AsyncHTTPTransport, False),
        "ours, through AsyncClient.send": (KeepAliveTransport, False),
        "ours, as the client sends (the head from bytes, the answer as a Reply)": (KeepAliveTransport, True),
    }


async def _one_pass(base: str, make: Callable[[], httpx2.AsyncBaseTransport], as_client: bool) -> tuple[float, float]:
    """CPU ms per request one at a time, and ten at once."""
    transport = make()
    async with httpx2.AsyncClient(transport=transport) as client:
        gets = GetRequests(client, base, HEADERS, transport)

        async def send(query: str) -> int:
            path = f"/res/v1/web/search?{urlencode({'q': query, 'count': '10'})}"
            if as_client:
                return await _read(await gets.send(gets.target(path)))
            url = httpx2.URL(base + path)
            request = httpx2.Request("GET", url, headers=HEADERS, extensions={"timeout": client.timeout.as_dict()})
            return await _read(await client.send(request, stream=True))

        for n in range(20):
            await send(f"warm {n}")
        start = _cpu()
        for n in range(REQUESTS):
            await send(f"one {n}")
        middle = _cpu()
        for r in range(ROUNDS):
            await asyncio.gather(*(send(f"round {r} {n}") for n in range(AT_ONCE)))
        end = _cpu()
    return (middle - start) / REQUESTS * 1000, (end - middle) / (ROUNDS * AT_ONCE) * 1000


async def measure(base: str) -> dict[str, tuple[float, float]]:
    """Median CPU ms per request (one at a time, ten at once) of each way, over ``PASSES`` rotated passes."""
    ways = _ways()
    names = list(ways)
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for p in range(PASSES):
        for name in names[p % len(names) :] + names[: p % len(names)]:
            seen[name].append(await _one_pass(base, *ways[name]))
    return {
        name: (statistics.median(a for a, _ in got), statistics.median(b for _, b in got)) for name, got in seen.items()
    }


def render(figures: dict[str, tuple[float, float]]) -> str:
    """The Markdown section."""
    first = next(iter(figures.values()))
    intro = (
        f"CPU time of this process per GET of the recorded page (gzip, read whole, not decoded) from a fake Brave in "
        f"a process of its own: {REQUESTS} one at a time, {ROUNDS} rounds of {AT_ONCE} at once; median of "
        f"{PASSES} rotated passes."
    )
    rows = [
        (name, f"{one:.3f} ms", f"{one / first[0]:.2f}×", f"{many:.3f} ms", f"{many / first[1]:.2f}×")
        for name, (one, many) in figures.items()
    ]
    header = ("way", "one at a time", "vs httpx2's", "10 at once", "vs httpx2's")
    return intro + "\n\n" + table(header, rows).rstrip("\n")


def main() -> int:
    """Start the fake, measure, print."""
    argparse.ArgumentParser(prog="python -m bench.upstream_http", description=__doc__).parse_args()
    fake = subprocess.Popen(
        [sys.executable, "-c", SERVE], cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert fake.stdout is not None
        base = fake.stdout.readline().strip()
        started = time.perf_counter()
        figures = asyncio.run(measure(base))
        print(render(figures))
        print(f"\n({time.perf_counter() - started:.0f} s)")
    finally:
        if fake.stdin is not None:
            fake.stdin.close()
        fake.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
