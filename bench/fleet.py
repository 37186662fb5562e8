"""The fleet: a team's agents sharing one key through three replicas over streamable HTTP on one redis-server.

Three ``python -m brave_search_mcp --transport http`` replicas share one Redis (``BRAVE_SEARCH_STATE``); twenty
agents (MCP client sessions, spread over the replicas) each replay the agent session's script (``session.SCRIPT``:
26 searches in 12 rounds), half of each agent's distinct queries shared by every agent and half its own. The fake
Brave runs in its own process (``brave_process``), as Brave is another machine: its work and its stamping of
arrivals never wait for the agents' interpreter, nor theirs for its. It enforces a 50/s plan and answers after
250 ms plus 50–400 ms of jitter. Three runs, each on a key never seen (an empty Redis): plain; with Redis killed mid-run
(once a third of the distinct queries reached Brave) and started again, empty, 2 s later; and plain again with the
plan stated to every replica before the clock starts (warm). The clock starts once every agent's session is open and
has listed the tools. Each kind of run is repeated three times, interleaved, each time with the latencies drawn from
another seed (the median wall is reported). Figures: failed calls, 429s, upstream requests against distinct queries,
the month's count in Redis against the requests Brave billed, and the wall against the ideal floor (the expected
slowest of twenty agents that each wait only for their own rounds' slowest fetch) and against the warm run.
"""

from __future__ import annotations

import heapq
import logging
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client

from brave_search_mcp.ratelimit.plan import horizon
from brave_search_mcp.state.redis_keys import count_key
from testkit.brave.brave import WEB_PATH
from testkit.redis_server import RedisServer
from testkit.tracked_server import free_port

from .brave_process import BraveProcess, brave_process
from .servers import our_arguments, our_env
from .session import SCRIPT
from .tables import table

logger = logging.getLogger(__name__)

REPLICAS, AGENTS, PLAN = 3, 20, 50
LATENCY = (0.30, 0.65)  # 250 ms plus 50–400 ms of jitter, drawn per answer
DOWN_SECONDS = 2.0  # Redis killed, then started again (empty) this long after
START_SECONDS = 30.0  # a replica that does not listen by then fails the bench
CALL_SECONDS = 60.0
RECOVERY_SECONDS = 20.0  # after the run, how long every replica may take to use Redis again
FLOOR_TRIALS = 2000
REPEATS = 3  # each kind of run, interleaved: the wall's median is what the section reports
SETUP = "The fake Brave runs in its own process, as Brave is another machine."
FLEET_HEADING = "## The fleet: three replicas, one Redis, twenty agents (issue 44)"
PLAIN, KILLED, WARM = "new key", "new key, Redis killed and back", "plan stated before the clock"


def agent_script(agent: int, script: Sequence[Sequence[str]] = SCRIPT) -> list[list[str]]:
    """The script as agent ``agent`` asks it: every other distinct query (in order of first use) is shared by all
    agents, the rest made its own."""
    order = list(dict.fromkeys(query for queries in script for query in queries))
    own = {query: f"{query} (agent {agent})" for n, query in enumerate(order) if n % 2}
    return [[own.get(query, query) for query in queries] for queries in script]


def distinct_queries(agents: int = AGENTS) -> int:
    """Queries the whole fleet asks: each one Brave need answer once."""
    return len({query for agent in range(agents) for queries in agent_script(agent) for query in queries})


def ideal_floor(agents: int = AGENTS, trials: int = FLOOR_TRIALS, seed: int = 44) -> float:
    """The expected wall of ``agents`` ideal agents (no queue, no duplicate fetch, a repeat answered at once): each
    round waits for its slowest new query; a query's fetch takes one draw of the latency, shared by every agent
    asking it; the fleet's wall is its slowest agent's."""
    rng = random.Random(seed)
    scripts = [agent_script(agent) for agent in range(agents)]
    total = 0.0
    for _ in range(trials):
        latency: dict[str, float] = {}
        slowest = 0.0
        for script in scripts:
            seen: set[str] = set()
            wall = 0.0
            for queries in script:
                new = [query for query in queries if query not in seen]
                seen.update(queries)
                wall += max((latency.setdefault(q, rng.uniform(*LATENCY)) for q in new), default=0.0)
            slowest = max(slowest, wall)
        total += slowest
    return total / trials


def window_floor(agents: int = AGENTS, trials: int = FLOOR_TRIALS, seed: int = 44) -> float:
    """``ideal_floor``'s agents, but every fetch starts within the plan's window as the limiter keeps it (at most
    ``PLAN`` starts in ``horizon(PLAN, PLAN)``, its margin included; first come, first served): what keeping a 50/s
    plan costs any client, before any work of its own."""
    rng = random.Random(seed)
    scripts = [agent_script(agent) for agent in range(agents)]
    window = horizon(PLAN, PLAN)
    total = 0.0
    for _ in range(trials):
        done: dict[str, float] = {}  # query -> when its answer came
        starts: list[float] = []  # ascending: requests are served in time order
        turns = [(0.0, agent, 0) for agent in range(agents)]  # (when, agent, round): each agent's next round
        slowest = 0.0
        while turns:
            now, agent, round_ = heapq.heappop(turns)
            if round_ == len(scripts[agent]):
                slowest = max(slowest, now)
                continue
            end = now
            for query in scripts[agent][round_]:
                if query not in done:
                    start = now if len(starts) < PLAN else max(now, starts[-PLAN] + window)
                    starts.append(start)
                    done[query] = start + rng.uniform(*LATENCY)
                end = max(end, done[query])
            heapq.heappush(turns, (end, agent, round_ + 1))
        total += slowest
    return total / trials


@dataclass(frozen=True)
class FleetRun:
    """One fleet run's figures."""

    name: str
    wall: float
    calls: int
    failed: int
    limited: int  # 429s the fake sent
    requests: int  # web searches the fake received
    distinct: int
    billed: int  # requests answered 200, once every replica used Redis again (a recovery search may add some)
    counted: int  # the month's count in Redis then
    back: float  # seconds after the last answer until every replica used Redis again


@dataclass
class FleetResults:
    """Every run (each kind repeated) and the floor."""

    runs: list[FleetRun]
    floor: float
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the machine's load average before the runs
    window_floor: float | None = None  # the ideal agents within the plan's window (``window_floor``)


@contextmanager
def replicas(base_url: str, redis_url: str, home: Path) -> Iterator[list[str]]:
    """Three HTTP replicas on one Redis; their MCP URLs once each listens (stopped on exit)."""
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for n in range(REPLICAS):
            port = free_port()
            env = our_env(base_url, home / f"replica{n}", BRAVE_SEARCH_STATE=redis_url)
            argv = [sys.executable, "-m", "brave_search_mcp", "--transport", "http", "--port", str(port)]
            procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls.append(f"http://127.0.0.1:{port}/mcp")
        for url, proc in zip(urls, procs, strict=True):
            _wait_listening(int(url.rsplit(":", 1)[1].split("/")[0]), proc)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"a replica exited with status {proc.returncode} before listening")
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"a replica did not listen on port {port} within {START_SECONDS:g} s")


class Gate:
    """Every agent's session opened before the clock starts (start-up excluded, as in the session part)."""

    def __init__(self, agents: int) -> None:
        self.waiting = agents
        self.all_in = anyio.Event()
        self.go = anyio.Event()

    async def ready(self) -> None:
        """This agent's session is open: wait for the start."""
        self.waiting -= 1
        if self.waiting == 0:
            self.all_in.set()
        await self.go.wait()


async def _agent(url: str, script: Sequence[Sequence[str]], failures: list[str], gate: Gate) -> None:
    """One MCP client session replaying its script, round by round, from the start."""
    async with Client(url, mode="legacy") as client:
        await client.list_tools()  # as a host does when it connects (the client checks results against the schemas)
        await gate.ready()
        for queries in script:
            async with anyio.create_task_group() as tg:
                for query in queries:
                    tg.start_soon(_call, client, query, failures)


async def _call(client: Client, query: str, failures: list[str]) -> None:
    try:
        with anyio.fail_after(CALL_SECONDS):
            result = await client.call_tool("brave_web_search", our_arguments(query))
        if result.is_error:
            failures.append(str((result.structured_content or {}).get("error", {}).get("code", "error")))
    except Exception as exc:  # a transport failure is a failed call too
        failures.append(type(exc).__name__)


async def _warm(urls: Sequence[str]) -> None:
    """One search per replica before the clock: the plan stated to each."""
    for n, url in enumerate(urls):
        async with Client(url, mode="legacy") as client:
            await client.call_tool("brave_web_search", our_arguments(f"warm-up {n}"))


async def _kill_and_restore(redis: RedisServer, upstream: BraveProcess, after: int) -> None:
    """Kill Redis once ``after`` searches reached Brave; start it again, empty, ``DOWN_SECONDS`` later."""
    for _ in range(100_000):  # bounded
        if await anyio.to_thread.run_sync(upstream.hits, WEB_PATH) >= after:  # a pipe round trip, off the loop
            break
        await anyio.sleep(0.01)
    redis.kill()
    logger.info("fleet: Redis killed after %d requests", await anyio.to_thread.run_sync(upstream.hits, WEB_PATH))
    await anyio.sleep(DOWN_SECONDS)
    await anyio.to_thread.run_sync(redis.start)


async def _shared_again(urls: Sequence[str]) -> float:
    """Seconds until every replica uses Redis again (its status not degraded); each is asked a search it has
    answered (a hit once it reads Redis again) and its status, every 0.1 s, bounded."""
    started = time.perf_counter()
    waiting = list(urls)
    for _ in range(int(RECOVERY_SECONDS / 0.1)):
        still = []
        for url in waiting:
            async with Client(url, mode="legacy") as client:
                await client.call_tool("brave_web_search", our_arguments(SCRIPT[0][0]))
                status = await client.call_tool("brave_web_search_status", {})
            if ((status.structured_content or {}).get("state") or {}).get("degraded"):
                still.append(url)
        waiting = still
        if not waiting:
            break
        await anyio.sleep(0.1)
    return time.perf_counter() - started


def _counted(redis_url: str) -> int:
    """The month's request counts in Redis, summed over keys (one key here)."""
    import redis as redis_py

    with redis_py.Redis.from_url(redis_url) as r:
        return sum(int(r.get(name) or 0) for name in r.scan_iter(match=count_key("*:month:*")))


async def run_fleet(name: str, seed: int = 0) -> FleetRun:
    """One run of the fleet on a key never seen (an empty Redis), as ``name`` says; ``seed`` draws the answers'
    latencies (the first answer, the probe's, always gets the first draw: one seed for every run would give every
    run the same slow or quick first round, which the floor, an average over draws, does not)."""
    with (
        brave_process(PLAN, latency=LATENCY, seed=seed) as upstream,
        RedisServer() as redis,
        tempfile.TemporaryDirectory(prefix="brave-fleet-") as home,
        replicas(upstream.base_url, redis.url, Path(home)) as urls,
    ):
        if name == WARM:
            await _warm(urls)
            upstream.reseed()  # the timed run draws the latencies a run on a new key with this seed draws
        upstream.reset()
        warm_count = _counted(redis.url)
        failures: list[str] = []
        distinct = distinct_queries()
        gate = Gate(AGENTS)
        async with anyio.create_task_group() as tg:
            for agent in range(AGENTS):
                tg.start_soon(_agent, urls[agent % REPLICAS], agent_script(agent), failures, gate)
            with anyio.fail_after(START_SECONDS):
                await gate.all_in.wait()
            if name == KILLED:
                tg.start_soon(_kill_and_restore, redis, upstream, distinct // 3)
            begin = time.perf_counter()
            gate.go.set()
        wall = time.perf_counter() - begin
        requests, limited = upstream.hits(WEB_PATH), upstream.rate_limited()
        back = await _shared_again(urls)  # the month's count is read once every replica uses Redis again
        await anyio.sleep(0.2)  # the writes beside the last replies land
        run = FleetRun(
            name=name,
            wall=wall,
            calls=AGENTS * sum(len(queries) for queries in SCRIPT),
            failed=len(failures),
            limited=limited,
            requests=requests,
            distinct=distinct,
            billed=upstream.hits(WEB_PATH, status=200),
            counted=_counted(redis.url) - warm_count,
            back=back,
        )
    logger.info(
        "fleet (%s): wall %.2f s, %d failed, %d × 429, %d requests for %d distinct, %d billed, %d counted, back %.1f s",
        name, run.wall, run.failed, run.limited, run.requests, run.distinct, run.billed, run.counted, run.back,
    )  # fmt: skip
    return run


async def run_fleets(*, quick: bool = False, repeats: int = REPEATS) -> FleetResults:
    """Each run ``repeats`` times, interleaved (``quick``: the plain one, once), and the ideal floor."""
    load = os.getloadavg()
    floor = ideal_floor()
    logger.info("fleet: ideal floor %.2f s (the expected slowest of %d ideal agents)", floor, AGENTS)
    names = (PLAIN,) if quick else (PLAIN, KILLED, WARM)
    runs = [await run_fleet(name, seed) for seed in range(1 if quick else repeats) for name in names]
    return FleetResults(runs, floor, load, window_floor())


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _each(values: Sequence[object]) -> str:
    """One figure per run, in run order (a single run: just it)."""
    return " · ".join(str(value) for value in values)


def render_fleet(found: FleetResults, command: str) -> str:
    """The fleet's section of docs/benchmarks.md, with the command that measured it: per run kind, the median wall
    (and its range) and every run's counts."""
    kinds: dict[str, list[FleetRun]] = {}
    for run in found.runs:
        kinds.setdefault(run.name, []).append(run)
    warm = _median([run.wall for run in kinds[WARM]]) if WARM in kinds else None
    header = ("Run", "Wall (median)", "× ideal floor", "× warm run", "Failed / calls", "429s", "Upstream / distinct",
              "Billed", "Counted", "Redis used again after")  # fmt: skip
    rows = []
    for name, runs in kinds.items():
        wall = _median([run.wall for run in runs])
        spread = f" ({min(r.wall for r in runs):.2f}–{max(r.wall for r in runs):.2f})" if len(runs) > 1 else ""
        rows.append(
            (
                f"{name} (×{len(runs)})" if len(runs) > 1 else name,
                f"{wall:.2f} s{spread}",
                f"{wall / found.floor:.2f}×",
                f"{wall / warm:.2f}×" if warm else "-",
                f"{sum(r.failed for r in runs)} / {sum(r.calls for r in runs)}",
                _each([r.limited for r in runs]),
                _each([f"{r.requests} / {r.distinct} ({r.requests / r.distinct:.3f}×)" for r in runs]),
                _each([r.billed for r in runs]),
                _each([r.counted for r in runs]),
                _each([f"{r.back:.1f} s" for r in runs]),
            )
        )
    return "\n".join(
        [
            f"{FLEET_HEADING}\n",
            " ".join(line.strip() for line in str(__doc__).split("\n\n", 1)[0].splitlines()) + f" {SETUP}\n",
            f"Ideal floor: {found.floor:.2f} s (the expected slowest of {AGENTS} agents that wait only for their own "
            f"rounds' slowest fetch, over {FLOOR_TRIALS} draws of the latency). Targets on a key never seen: 0 "
            "failed, ≤ 3 × 429, upstream = distinct, wall ≤ 1.2× the floor; Redis killed and back: 0 failed, "
            "upstream ≤ 1.05× distinct, counted = billed. Each kind of run is repeated (interleaved) and its median "
            "wall shown with the range; the counts are every run's, in order. Billed and counted are read once "
            "every replica uses Redis again (each asked a search it answered before, and its status, every 0.1 s: "
            "the last column, from the last answer).\n",
            *(
                [
                    f"Within the plan's window as the limiter keeps it ({PLAN} starts in "
                    f"{horizon(PLAN, PLAN) * 1000:.0f} ms, first come first served) the same ideal agents take "
                    f"{found.window_floor:.2f} s ({found.window_floor / found.floor:.2f}× the floor): what keeping "
                    "the plan costs before any work of the client's own.\n"
                ]
                if found.window_floor
                else []
            ),
            table(header, rows),
            f"Measured by `{command}`, with a load average of {found.load[0]:.2f} / {found.load[1]:.2f} / "
            f"{found.load[2]:.2f} (1 / 5 / 15 min) before the runs: walls on a loaded machine are provisional.\n",
        ]
    )
