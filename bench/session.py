"""An agent's session, ours beside Brave's official server: what a user of either feels and pays.

A fixed script of 26 web searches in 12 rounds (an agent's parallel tool calls: 1–4 at once, the next round
written when the last answer of this one has come), 8 of them repeats of a query an earlier round asked. Both
servers run as real stdio subprocesses, one after the other (the order alternating run by run), against the same
fake Brave: every answer takes 250 ms, as Brave's do, and the plan's rate is enforced (429 with Brave's
rate-limit headers past it). Per server: the session's wall time, failed calls, the requests the fake received
(billed: answered 200), the 429s it sent, and each call's round trip.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

from testkit.brave.brave import WEB_PATH
from testkit.brave.http_server import FakeBraveServer

from .official import OfficialServer
from .servers import OURS, THEIRS, Contender, at_once, ours, outcome, started, theirs
from .upstream import make_fake

logger = logging.getLogger(__name__)

LATENCY = 0.25  # seconds Brave takes to answer a search
PLANS = (20, 1)  # requests per second: a paid plan, then the free one
# Queries an agent researching one question might send; the repeats are an agent checking back (four rounds ask
# only what earlier rounds asked: a server with a cache answers those without waiting on Brave).
SCRIPT: tuple[tuple[str, ...], ...] = (
    ("python asyncio rate limiting best practices",),
    ("aiolimiter token bucket", "asyncio semaphore vs rate limiter", "brave search api rate limit headers"),
    (
        "x-ratelimit-policy header format",
        "http 429 retry-after handling python",
        "exponential backoff jitter",
        "brave search api pricing plans",
    ),
    ("asyncio semaphore vs rate limiter", "python asyncio rate limiting best practices"),
    ("sliding window rate limiter redis", "sqlite wal concurrent writers", "http 429 retry-after handling python"),
    ("brave search api rate limit headers",),
    ("mcp server stdio transport python", "mcp tools/call concurrency"),
    (
        "sqlite busy_timeout python",
        "anyio capacity limiter",
        "token bucket vs leaky bucket",
        "exponential backoff jitter",
    ),
    ("x-ratelimit-policy header format", "mcp server stdio transport python"),
    ("anyio fail_after deadline",),
    ("python ttl lru cache cachetools", "rate limiting agent tool calls"),
    ("sqlite busy_timeout python",),
)


def repeats(script: Sequence[Sequence[str]] = SCRIPT) -> tuple[int, int]:
    """Calls whose query an earlier round already asked (a server with a cache need not send them), and rounds
    made of such calls only (a server with a cache need not wait on Brave for them)."""
    seen: set[str] = set()
    calls = rounds = 0
    for queries in script:
        again = sum(1 for query in queries if query in seen)
        calls, rounds = calls + again, rounds + (bool(queries) and again == len(queries))
        seen.update(queries)
    return calls, rounds


@dataclass(frozen=True)
class SessionRun:
    """One server's session at one plan: wall time, failed calls, what the fake saw, each call's round trip."""

    server: str
    rps: int
    wall: float
    calls: int
    failed: int
    requests: int  # web searches the fake received
    billed: int  # of them answered 200: what Brave bills
    limited: int  # answered 429 by the plan's rate window
    durations: list[float]


@dataclass
class SessionResults:
    """Every run at every plan, per server; ``skipped`` says why the official server is absent."""

    runs: dict[int, dict[str, list[SessionRun]]] = field(default_factory=dict)
    skipped: str | None = None
    official_version: str | None = None


async def run_session(contender: Contender, upstream: FakeBraveServer, rps: int) -> SessionRun:
    """The script on a freshly started server, against a fake that forgot every earlier request."""
    upstream.fake.reset()
    async with started(contender) as session:
        durations: list[float] = []
        failed = 0
        begin = perf_counter()
        for queries in SCRIPT:
            answered, _ = await at_once(session, [contender.arguments(query) for query in queries])
            durations.extend(answer.seconds for answer in answered)
            failed += sum(1 for answer in answered if outcome(answer.message) != "ok")
        wall = perf_counter() - begin
    fake = upstream.fake
    return SessionRun(
        server=contender.name,
        rps=rps,
        wall=wall,
        calls=len(durations),
        failed=failed,
        requests=fake.hits(WEB_PATH),
        billed=fake.hits(WEB_PATH, status=200),
        limited=fake.rate_limited_count,
        durations=durations,
    )


async def run_sessions(
    official: OfficialServer | str, runs: int, plans: Sequence[int] = PLANS, latency: float = LATENCY
) -> SessionResults:
    """``runs`` sessions per plan and server, the servers' order alternating; ``official``: the installed server or
    why it is left out."""
    installed = official if isinstance(official, OfficialServer) else None
    results = SessionResults(skipped=official if isinstance(official, str) else None)
    results.official_version = installed.version if installed else None
    for run in range(runs):
        for rps in plans:
            with FakeBraveServer(make_fake(rps), latency=latency) as upstream, tempfile.TemporaryDirectory() as home:
                people = [ours(upstream.base_url, Path(home))]
                if installed is not None:
                    people.append(theirs(upstream.base_url, installed))
                for contender in people if run % 2 == 0 else people[::-1]:
                    done = await run_session(contender, upstream, rps)
                    results.runs.setdefault(rps, {OURS: [], THEIRS: []})[contender.name].append(done)
                    logger.info(
                        "session at %d rps, run %d, %s: wall %.2f s, %d failed, %d requests (%d billed), %d × 429",
                        rps, run + 1, done.server, done.wall, done.failed, done.requests, done.billed, done.limited,
                    )  # fmt: skip
    return results
