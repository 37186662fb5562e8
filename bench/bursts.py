"""Issue 22's burst figures, ours beside Brave's official server: real stdio servers, a fresh fake Brave per run.

``python -m bench.bursts`` (also part of the full ``python -m bench``). Ours runs as a user gets it: the default
SQLite state, in a private ``XDG_CACHE_HOME`` per run (so every run starts with a key never seen); the official
server (``@brave/brave-search-mcp-server``, see ``bench.official``) has no throttle and no state, so it sends
whatever it is asked to at once: its upstream 429s are reported beside ours. Both speak to the same kind of fake
(``testkit.brave``: a real HTTP server with Brave's rate headers and a 1-second sliding window), one fresh fake
per run and per server, and the runs alternate which server goes first.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession

from .logs import configure_logging
from .official import OfficialServer, ensure_official
from .sidebyside import OURS, THEIRS, Contender, contenders, parallel_wall, started
from .stats import summarize
from .tables import table

logger = logging.getLogger(__name__)

FAST, PLAN_20 = 1000, 20  # requests per second the fake allows (and its headers advertise)
RUNS = 3
WINDOW_CLEAR_SECONDS = 1.1  # between the two processes of (c): the first one's starts leave Brave's 1 s window


@dataclass(frozen=True)
class Burst:
    """One burst on one server: how its calls ended, what the upstream saw, and the wall time (seconds)."""

    calls: int
    ok: int
    codes: dict[str, int]  # failed calls by error code (ours) or "error" (official: plain text)
    upstream_429: int
    upstream_requests: int
    wall: float


@dataclass(frozen=True)
class Scenario:
    """A burst written to a fresh server: how many calls, how fast the fake allows, how the calls are written."""

    key: str
    title: str
    calls: int
    rate: int
    one_write: bool = False  # every request line in one pipe write (a raw-pipe client), else one write per line
    env: tuple[tuple[str, str], ...] = ()  # extra settings for ours


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("a", "150 concurrent `brave_web_search` calls over one stdio server, upstream allows 1,000/s", 150, FAST),
    Scenario("b", "200 concurrent calls at a 20/s plan", 200, PLAN_20),
    Scenario(
        "d",
        "raw-pipe client: 140 calls in one pipe write, upstream 1,000/s, call deadline 15 s",
        140,
        FAST,
        one_write=True,
        env=(("BRAVE_SEARCH_DEADLINE_SECONDS", "15"),),
    ),
)


@dataclass
class Results:
    """Every run of every scenario, per server (``"a"`` → ``{"ours": [...], "official": [...]}``)."""

    runs: int
    bursts: dict[str, dict[str, list[Burst]]] = field(default_factory=dict)
    skipped: str | None = None
    official_version: str | None = None


def _outcome(message: dict[str, Any]) -> str:
    """``ok``, our error code, or ``error`` (the official server's failures are plain text)."""
    result = message.get("result")
    if not isinstance(result, dict):
        return "jsonrpc-error"
    if not result.get("isError"):
        return "ok"
    error = (result.get("structuredContent") or {}).get("error") or {}
    return str(error.get("code") or "error")


async def burst(
    session: RpcSession, contender: Contender, fake: FakeBrave, calls: int, tag: str, *, one_write: bool
) -> Burst:
    """``calls`` distinct web searches written at once (``parallel_wall``): how they ended, the 429s and requests
    the fake saw meanwhile, and the wall time from the first write to the last answer."""
    limited, requests = fake.rate_limited_count, len(fake.requests)
    replies, wall = await parallel_wall(session, contender.arguments, tag, calls=calls, one_write=one_write)
    outcomes = [_outcome(reply.message) for reply in replies]
    codes = dict(Counter(code for code in outcomes if code != "ok"))
    limited, requests = fake.rate_limited_count - limited, len(fake.requests) - requests
    return Burst(calls, outcomes.count("ok"), codes, limited, requests, wall)


def _prepared(
    name: str, installed: OfficialServer | None, base_url: str, state: Path, extra: Sequence[tuple[str, str]]
) -> Contender:
    """Server ``name`` pointed at this run's fake; ours with its own state directory and settings."""
    found = next(c for c in contenders(base_url, installed) if c.name == name)
    if name != OURS:
        return found
    return replace(found, env={**found.env, "XDG_CACHE_HOME": str(state), **dict(extra)})


async def run_scenario(scenario: Scenario, installed: OfficialServer | None, tmp: Path, name: str, run: int) -> Burst:
    """One fresh fake, one fresh server (a fresh state for ours), one burst."""
    fake = FakeBrave(rate_per_second=scenario.rate, monthly_limit=0)
    with FakeBraveServer(fake) as upstream:
        state = tmp / f"{scenario.key}-{run}-{name}"
        who = _prepared(name, installed, upstream.base_url, state, scenario.env)
        async with started(who) as session:
            tag = f"{scenario.key} {run}"
            return await burst(session, who, fake, scenario.calls, tag, one_write=scenario.one_write)


async def run_processes(
    first_calls: int, installed: OfficialServer | None, tmp: Path, name: str, run: int
) -> tuple[Burst, Burst]:
    """(c): a fresh process's first parallel calls at a 20/s plan, then a second process over the same state."""
    fake = FakeBrave(rate_per_second=PLAN_20, monthly_limit=0)
    out: list[Burst] = []
    with FakeBraveServer(fake) as upstream:
        who = _prepared(name, installed, upstream.base_url, tmp / f"c-{run}-{first_calls}-{name}", ())
        for n, calls in enumerate((first_calls, 10)):
            if n:
                await anyio.sleep(WINDOW_CLEAR_SECONDS)
            async with started(who) as session:
                out.append(await burst(session, who, fake, calls, f"c {run} {n}", one_write=False))
    return out[0], out[1]


async def run_bursts(runs: int = RUNS, official: OfficialServer | str | None = None) -> Results:
    """Every scenario ``runs`` times on each server, the order alternating run by run; ``official``: the installed
    server, or why it is left out (None: install it with npm if missing)."""
    found = official if official is not None else await anyio.to_thread.run_sync(ensure_official)
    installed = found if isinstance(found, OfficialServer) else None
    names = [OURS, THEIRS] if installed else [OURS]
    results = Results(runs, skipped=None if installed else str(found))
    results.official_version = installed.version if installed else None
    with tempfile.TemporaryDirectory(prefix="brave-bench-bursts-") as tmp_dir:
        tmp = Path(tmp_dir)
        jobs: list[tuple[str, Callable[[str, int], Awaitable[Burst | tuple[Burst, Burst]]]]] = [
            (s.key, partial(run_scenario, s, installed, tmp)) for s in SCENARIOS
        ]
        jobs += [("c", partial(run_processes, 10, installed, tmp)), ("c30", partial(run_processes, 30, installed, tmp))]
        for key, job in jobs:
            per = results.bursts.setdefault(key, {name: [] for name in names})
            for run in range(runs):
                for name in names if run % 2 == 0 else names[::-1]:
                    done = await job(name, run)
                    bursts = list(done) if isinstance(done, tuple) else [done]
                    per[name].extend(bursts)
                    logger.info("bursts %s run %d %s: %s", key, run + 1, name, bursts)
    return results


def _wall(bursts: Sequence[Burst]) -> str:
    walls = summarize([b.wall for b in bursts])
    spread = f" ({walls.minimum:.2f}–{walls.maximum:.2f})" if walls.n > 1 else ""
    return f"{walls.median:.2f} s{spread}"


def _cell(bursts: Sequence[Burst]) -> str:
    """ok of calls, failures by code, upstream 429s, wall: medians over the runs (range of the walls)."""
    if not bursts:
        return "—"
    ok = statistics.median(b.ok for b in bursts)
    codes = sorted({code for b in bursts for code in b.codes})
    failed = "".join(f", {statistics.median(b.codes.get(code, 0) for b in bursts):g} {code}" for code in codes)
    limited = statistics.median(b.upstream_429 for b in bursts)
    return f"{ok:g}/{bursts[0].calls} ok{failed}, {limited:g} × 429, wall {_wall(bursts)}"


def render_bursts(results: Results) -> str:
    """The Markdown section for docs/benchmarks.md (``python -m bench`` puts the command above it)."""
    official = f"official {results.official_version}" if results.official_version else "official (not run)"
    head = (
        f"Each figure: the median of {results.runs} run(s), each on a fresh fake and a fresh "
        "server (ours with the default SQLite state in its own `XDG_CACHE_HOME`, so the key is never seen before "
        "the run), the order of the two servers alternating; the wall runs from the first request written to the "
        "last answer read (start-up excluded), with the range over the runs in brackets. Failed calls are counted "
        "by our error code (the official server answers failures in plain text: `error`). 429s are the answers "
        "the fake refused for its rate window.\n\n"
    )
    if results.skipped:
        head += f"The official server was not run: {results.skipped}.\n\n"
    rows: list[tuple[str, str, str]] = []
    titles = {s.key: s.title for s in SCENARIOS}
    for key in ("a", "b", "d"):
        per = results.bursts.get(key, {})
        rows.append((f"({key}) {titles[key]}", _cell(per.get(OURS, [])), _cell(per.get(THEIRS, []))))
    for key, first in (("c", 10), ("c30", 30)):
        per = results.bursts.get(key, {})
        for index, title in (
            (0, f"(c) a fresh process's first {first} parallel calls at a 20/s plan (key never seen)"),
            (
                1,
                f"(c) then a second process of the same user, 10 parallel calls, {WINDOW_CLEAR_SECONDS:g} s later "
                f"(ours: the shared state holds the plan the first process's {first} calls learned)",
            ),
        ):
            ours, theirs = per.get(OURS, [])[index::2], per.get(THEIRS, [])[index::2]
            rows.append((title, _cell(ours), _cell(theirs)))
    return head + table(("scenario", "ours", official), rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run and print the section."""
    parser = argparse.ArgumentParser(prog="python -m bench.bursts", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs of each scenario per server (default {RUNS})")
    parser.add_argument("--no-official", action="store_true", help="leave the official server out")
    ns = parser.parse_args(argv)
    configure_logging(prog="bench.bursts")
    skip = "--no-official given" if ns.no_official else None
    results = anyio.run(lambda: run_bursts(max(1, ns.runs), skip))
    print(render_bursts(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
