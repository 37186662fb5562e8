"""Issues 22 and 36's bursts through our real stdio server: many calls at once, at the plan's rate, none refused.

Each run starts a fresh fake Brave and a fresh server on the default state (its own HOME, so the key was never
seen); the wall runs from the first request written to the last answer read (start-up excluded). Issue 36 adds
answers that come back late by a varying amount (jitter) and a plan that shrinks under a stored one.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import anyio

from testkit.brave.http_server import FakeBraveServer, Latency

from .servers import Contender, at_once, ours, outcome, started
from .upstream import make_fake

logger = logging.getLogger(__name__)

FAST, PLAN = 1000, 20  # requests per second the fake allows (and its headers advertise)
WINDOW_CLEAR_SECONDS = 1.1  # between the two processes of (c): the first one's starts leave Brave's 1 s window
FRESH_MAX_S = 0.5  # (c): ten calls of a fresh process, and of a second one, each within half a second
JITTER = (0.05, 0.4)  # (e): each answer's latency, drawn per request from a seeded generator
JITTER_MAX_S, JITTER_MAX_429 = 13.0, 3  # (e): issue 36's target
BEFORE, AFTER = 50, 1  # (f): the plan the state learned, then the one Brave allows
SHRINK_MAX_S, SHRINK_MAX_429 = 10.5, 1  # (f): issue 36's target ("about 9–10 s", at most one 429 per shrink)


@dataclass(frozen=True)
class Scenario:
    """A burst written to a fresh server: its key in the table, how many calls, how fast the fake allows."""

    key: str
    title: str
    calls: int
    rate: int
    one_write: bool = False  # every request line in one pipe write (a raw-pipe client), else one write per line
    deadline: str | None = None  # our BRAVE_SEARCH_DEADLINE_SECONDS for the run
    latency: Latency = 0.0  # how late the fake answers (a range: drawn per request)
    max_wall: float | None = None  # the target: every run within this many seconds...
    max_limited: int = 0  # ...and at most this many 429s from the fake


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("a", "(a) 150 calls at once, upstream allows 1,000/s", 150, FAST),
    Scenario("b", "(b) 200 calls at once at a 20/s plan", 200, PLAN),
    Scenario("d", "(d) 140 calls in one pipe write, 1,000/s, call deadline 15 s", 140, FAST, True, "15"),
    Scenario(
        "e", "(e) 200 calls at once at a 20/s plan, each answer 50–400 ms late (seeded)", 200, PLAN,
        latency=JITTER, max_wall=JITTER_MAX_S, max_limited=JITTER_MAX_429,
    ),
)  # fmt: skip
FRESH: tuple[Scenario, ...] = (  # (c): two processes of one user, one state, 1.1 s apart
    Scenario("c1", "(c) a fresh process's first 10 calls at once at a 20/s plan (key never seen)", 10, PLAN,
             max_wall=FRESH_MAX_S),
    Scenario("c2", "(c) then a second process of the same user, 10 calls at once, 1.1 s later", 10, PLAN,
             max_wall=FRESH_MAX_S),
)  # fmt: skip
# (f): one call learns a 50/s plan (stored); then Brave allows 1/s, and a second process sends 10 at once.
SHRINK = Scenario(
    "f", f"(f) a stored {BEFORE}/s plan shrinks to {AFTER}/s: a second process's 10 calls at once", 10, AFTER,
    max_wall=SHRINK_MAX_S, max_limited=SHRINK_MAX_429,
)  # fmt: skip


@dataclass(frozen=True)
class Burst:
    """One burst: how its calls ended, what the fake saw, and the wall time (seconds)."""

    key: str
    calls: int
    ok: int
    codes: dict[str, int]  # failed calls by our error code
    limited: int  # answers the fake refused for its rate window (429)
    requests: int
    wall: float


async def burst(contender: Contender, upstream: FakeBraveServer, scenario: Scenario, tag: str) -> Burst:
    """``scenario.calls`` distinct searches written at once to a freshly started server."""
    fake = upstream.fake
    async with started(contender) as session:
        limited, requests = fake.rate_limited_count, fake.hits()
        queries = [contender.arguments(f"{tag} call {n}") for n in range(scenario.calls)]
        answered, wall = await at_once(session, queries, one_write=scenario.one_write)
    outcomes = [outcome(answer.message) for answer in answered]
    codes = dict(Counter(code for code in outcomes if code != "ok"))
    return Burst(
        scenario.key, scenario.calls, outcomes.count("ok"), codes, fake.rate_limited_count - limited,
        fake.hits() - requests, wall,
    )  # fmt: skip


def scenarios() -> tuple[Scenario, ...]:
    """Every scenario, in the report's order."""
    return (*SCENARIOS[:2], *FRESH, SCENARIOS[2], *SCENARIOS[3:], SHRINK)


def met(scenario: Scenario, found: Burst) -> bool:
    """Whether one run met its scenario's target: every call answered, few enough 429s, fast enough."""
    fast = scenario.max_wall is None or found.wall <= scenario.max_wall
    return found.ok == found.calls and found.limited <= scenario.max_limited and fast


async def shrunk(home: Path, run: int) -> Burst:
    """(f): a first process learns the 50/s plan with one call; Brave then allows 1/s (and says so); a second
    process of the same user sends 10 calls at once on the stored plan."""
    with FakeBraveServer(make_fake(BEFORE)) as upstream:
        contender = ours(upstream.base_url, home / f"f-{run}")
        await burst(contender, upstream, Scenario("f0", "", 1, BEFORE), f"f {run} learn")
        upstream.fake.rate_per_second = AFTER
        await anyio.sleep(WINDOW_CLEAR_SECONDS)
        return await burst(contender, upstream, SHRINK, f"f {run}")


async def run_bursts(runs: int, home: Path) -> list[Burst]:
    """Every scenario ``runs`` times, each on a fresh fake and a fresh state under ``home``."""
    done: list[Burst] = []
    for run in range(runs):
        for scenario in SCENARIOS:
            with FakeBraveServer(make_fake(scenario.rate), latency=scenario.latency, seed=run) as upstream:
                extra = {"BRAVE_SEARCH_DEADLINE_SECONDS": scenario.deadline} if scenario.deadline else {}
                contender = ours(upstream.base_url, home / f"{scenario.key}-{run}", **extra)
                done.append(await burst(contender, upstream, scenario, f"{scenario.key} {run}"))
        with FakeBraveServer(make_fake(PLAN)) as upstream:
            contender = ours(upstream.base_url, home / f"c-{run}")  # both processes: one user, one state
            for n, scenario in enumerate(FRESH):
                if n:
                    await anyio.sleep(WINDOW_CLEAR_SECONDS)
                done.append(await burst(contender, upstream, scenario, f"c {run} {n}"))
        done.append(await shrunk(home, run))
        for found in done[-len(SCENARIOS) - len(FRESH) - 1 :]:
            logger.info("burst %s, run %d: %d/%d ok, %d × 429, wall %.2f s", found.key, run + 1, found.ok,
                        found.calls, found.limited, found.wall)  # fmt: skip
    return done
