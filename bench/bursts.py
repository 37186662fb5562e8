"""Issue 22's bursts through our real stdio server: many calls at once, at the plan's rate, none refused.

Each run starts a fresh fake Brave and a fresh server on the default state (its own HOME, so the key was never
seen); the wall runs from the first request written to the last answer read (start-up excluded).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import anyio

from testkit.brave.http_server import FakeBraveServer

from .servers import Contender, at_once, ours, outcome, started
from .upstream import make_fake

logger = logging.getLogger(__name__)

FAST, PLAN = 1000, 20  # requests per second the fake allows (and its headers advertise)
WINDOW_CLEAR_SECONDS = 1.1  # between the two processes of (c): the first one's starts leave Brave's 1 s window
FRESH_MAX_S = 0.5  # (c): ten calls of a fresh process, and of a second one, each within half a second


@dataclass(frozen=True)
class Scenario:
    """A burst written to a fresh server: its key in the table, how many calls, how fast the fake allows."""

    key: str
    title: str
    calls: int
    rate: int
    one_write: bool = False  # every request line in one pipe write (a raw-pipe client), else one write per line
    deadline: str | None = None  # our BRAVE_SEARCH_DEADLINE_SECONDS for the run


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("a", "(a) 150 calls at once, upstream allows 1,000/s", 150, FAST),
    Scenario("b", "(b) 200 calls at once at a 20/s plan", 200, PLAN),
    Scenario("d", "(d) 140 calls in one pipe write, 1,000/s, call deadline 15 s", 140, FAST, True, "15"),
)
FRESH: tuple[Scenario, ...] = (  # (c): two processes of one user, one state, 1.1 s apart
    Scenario("c1", "(c) a fresh process's first 10 calls at once at a 20/s plan (key never seen)", 10, PLAN),
    Scenario("c2", "(c) then a second process of the same user, 10 calls at once, 1.1 s later", 10, PLAN),
)


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


async def run_bursts(runs: int, home: Path) -> list[Burst]:
    """Every scenario ``runs`` times, each on a fresh fake and a fresh state under ``home``."""
    done: list[Burst] = []
    for run in range(runs):
        for scenario in SCENARIOS:
            with FakeBraveServer(make_fake(scenario.rate)) as upstream:
                extra = {"BRAVE_SEARCH_DEADLINE_SECONDS": scenario.deadline} if scenario.deadline else {}
                contender = ours(upstream.base_url, home / f"{scenario.key}-{run}", **extra)
                done.append(await burst(contender, upstream, scenario, f"{scenario.key} {run}"))
        with FakeBraveServer(make_fake(PLAN)) as upstream:
            contender = ours(upstream.base_url, home / f"c-{run}")  # both processes: one user, one state
            for n, scenario in enumerate(FRESH):
                if n:
                    await anyio.sleep(WINDOW_CLEAR_SECONDS)
                done.append(await burst(contender, upstream, scenario, f"c {run} {n}"))
        for found in done[-len(SCENARIOS) - len(FRESH) :]:
            logger.info("burst %s, run %d: %d/%d ok, %d × 429, wall %.2f s", found.key, run + 1, found.ok,
                        found.calls, found.limited, found.wall)  # fmt: skip
    return done
