"""Issue 22 item 3: per-call overhead beside the official server, with each SDK's own floor and a baseline revision.

``python -m bench.overhead`` (also part of the full ``python -m bench``) runs, in one session against one fake
Brave (real HTTP, the recorded 10-result page, 1,000 requests/s), samples interleaved and the order rotating:

- ours as a user gets it (the default SQLite state, in a private ``XDG_CACHE_HOME``);
- ours at ``--baseline REV`` when given (none by default), extracted with ``git archive``, same settings: the
  *before* of every figure, measured in the same session as the *after*;
- Brave's official server (``bench.official``);
- each SDK's floor: one trivial async tool answering 4,000 bytes of text, on the Python SDK over our stdio
  transport (``--serve-floor``, what our server runs on), and on the Node SDK the official server installed
  (``bench/node/floor-server.mjs``). What a server spends beyond its SDK's floor is its own.

Figures: one web search, a cache miss (round trip over stdio), and 10 distinct searches written at once (wall from
the first write to the last answer); the CPU time (user + system) each server process used per call meanwhile.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

from .logs import configure_logging
from .official import OfficialServer, ensure_official
from .results import FAST_RATE
from .sidebyside import OURS, THEIRS, Contender, contenders, parallel_wall, query_only, started, timed_call
from .stats import Summary, summarize
from .tables import table
from .upstream import REPO_ROOT, load_recorded_page, make_fake

logger = logging.getLogger(__name__)

# No "before" by default: the revision before issue 22 item 3 (8e7a657) needs tenacity, which the package no
# longer depends on; `--baseline REV` measures any revision this environment can still run.
BASELINE_REV: str | None = None
BASELINE = "baseline"
MEMORY = "ours-memory"  # ours with BRAVE_SEARCH_STATE=memory: what the cross-process state costs per call
PY_FLOOR, NODE_FLOOR = "python-floor", "node-floor"
FLOOR_TOOL = "echo"
FLOOR_BYTES = 4000  # about the size of the text a 10-result search answers with
NODE_FLOOR_SCRIPT = Path(__file__).resolve().parent / "node" / "floor-server.mjs"
SAMPLES, RUNS, WARMUP, PARALLEL = 100, 15, 5, 10


@dataclass
class Figures:
    """One server's samples (seconds)."""

    miss: list[float] = field(default_factory=list)
    parallel: list[float] = field(default_factory=list)
    cpu_miss: float = 0.0  # CPU seconds (user + system) of the server process per call, misses one at a time
    cpu_parallel: float = 0.0  # ... and in the rounds of 10 at once


@dataclass
class Overhead:
    """Every server's figures from one session; absent servers say why."""

    figures: dict[str, Figures]
    notes: list[str]
    baseline_rev: str | None
    official_version: str | None


def serve_floor() -> int:
    """The Python SDK's floor: one trivial async tool served by our stdio transport (``--serve-floor``)."""
    from mcp.server.mcpserver import MCPServer

    from brave_search_mcp.faces.stdio import run_stdio

    server: MCPServer[None] = MCPServer("floor")
    text = "x" * FLOOR_BYTES

    @server.tool(name=FLOOR_TOOL)
    async def echo(query: str) -> str:
        """Echo."""
        return text

    return run_stdio(server)


def floor_contenders(installed: OfficialServer | None) -> list[Contender]:
    """Both SDKs' floors (the Node one only when the official server, and so its SDK, is installed)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    python = [sys.executable, "-m", "bench.overhead", "--serve-floor"]
    found = [Contender(PY_FLOOR, "floor", python, env, REPO_ROOT, query_only, FLOOR_TOOL)]
    node = shutil.which("node")
    if installed is not None and node is not None:
        node_env = {**env, "BENCH_NODE_MODULES": str(installed.cache_dir / "node_modules")}
        node_env["BENCH_FLOOR_BYTES"] = str(FLOOR_BYTES)
        argv = [node, str(NODE_FLOOR_SCRIPT)]
        found.append(Contender(NODE_FLOOR, "floor", argv, node_env, installed.cache_dir, query_only, FLOOR_TOOL))
    return found


def extract_baseline(rev: str, into: Path) -> Path | str:
    """``src/`` of ``rev`` under ``into`` (for PYTHONPATH), or why it could not be had."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", "--format=tar", rev, "src"],
            capture_output=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"baseline {rev} not run: git archive failed ({exc})"
    if archive.returncode != 0:
        return f"baseline {rev} not run: {archive.stderr.decode(errors='replace').strip()[:200]}"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_overhead(samples: int = SAMPLES, runs: int = RUNS, baseline: str | None = BASELINE_REV) -> Overhead:
    """All servers in one session: ``samples`` interleaved misses, then ``runs`` rounds of 10 at once."""
    notes: list[str] = []
    official = await anyio.to_thread.run_sync(ensure_official)
    installed = official if isinstance(official, OfficialServer) else None
    if installed is None:
        notes.append(str(official))
    fake = make_fake(load_recorded_page(), rate_per_second=FAST_RATE, keys=(VALID_KEY,))
    with tempfile.TemporaryDirectory(prefix="brave-bench-overhead-") as tmp_dir, FakeBraveServer(fake) as upstream:
        tmp = Path(tmp_dir)
        found = contenders(upstream.base_url, installed)
        ours = found[0]
        web = [
            replace(ours, env={**ours.env, "XDG_CACHE_HOME": str(tmp / "ours")}),
            replace(
                ours, name=MEMORY, env={**ours.env, "XDG_CACHE_HOME": str(tmp / MEMORY), "BRAVE_SEARCH_STATE": "memory"}
            ),
        ]
        if baseline:
            src = await anyio.to_thread.run_sync(extract_baseline, baseline, tmp / "baseline")
            if isinstance(src, str):
                notes.append(src)
                baseline = None
            else:
                env = {**ours.env, "XDG_CACHE_HOME": str(tmp / BASELINE), "PYTHONPATH": str(src)}
                web.append(replace(ours, name=BASELINE, env=env))
        web += found[1:]
        floors = floor_contenders(installed)
        everyone = web + floors
        figures = {c.name: Figures() for c in everyone}
        async with AsyncExitStack() as stack:
            sessions = {c.name: await stack.enter_async_context(started(c)) for c in everyone}

            async def miss(c: Contender, query: str) -> float:
                expect = None if c in floors else True  # a floor has no fake behind it
                return await timed_call(sessions[c.name], c, query, upstream, expect_request=expect)

            async def burst(c: Contender, label: str) -> float:
                session = sessions[c.name]
                _, wall = await parallel_wall(session, c.arguments, label, tool=c.tool, calls=PARALLEL, check=c.name)
                return wall

            for c in everyone:
                for n in range(WARMUP):
                    await miss(c, f"warm-up {n}")
            before = {c.name: cpu_seconds(sessions[c.name].pid) for c in everyone}
            for k in range(samples):
                for c in everyone[k % len(everyone) :] + everyone[: k % len(everyone)]:
                    figures[c.name].miss.append(await miss(c, f"overhead {k}"))
            middle = {c.name: cpu_seconds(sessions[c.name].pid) for c in everyone}
            for r in range(runs):
                for c in everyone[r % len(everyone) :] + everyone[: r % len(everyone)]:
                    figures[c.name].parallel.append(await burst(c, f"overhead parallel {r}"))
            for c in everyone:
                fig, after = figures[c.name], cpu_seconds(sessions[c.name].pid)
                fig.cpu_miss = (middle[c.name] - before[c.name]) / samples
                fig.cpu_parallel = (after - middle[c.name]) / (runs * PARALLEL)
    return Overhead(figures, notes, baseline, installed.version if installed else None)


# Where a miss's time went before this work, and what was cut: measured on this machine on 2026-11-25 (a trace of
# the server's own spans, unprofiled, and cProfile of the server process); not re-measured by this command.
FINDINGS = """**What was cut (issue 22 item 3).** Against the revision before this work (8e7a657), measured in one
session with this bench's baseline option while it could still run: a cache miss was 2.0–2.4× the official server and 10
at once 3.4–3.8×. Before, per cache miss in the server: (1) seven SQLite state
operations (cache look-up, lease, spending-cap booking, rate reservation, plan update, cache write, lease
release), each a hop to a worker thread: 0.19–0.33 ms each, about 1.8 ms per miss, and ten parallel calls queued
70 of them behind the one connection lock (1–9 ms each). They now run on the event loop while the file is free
(22–130 µs each, about 0.45 ms per miss) and wait in a worker thread only while another process writes. (2) The
cache write's expiry sweep had no index and read every stored body (the column sits after the body): 1.6 ms per
write with 256 entries of 30 KB, 0.1 ms with the index. (3) SQLite's automatic WAL checkpoint fsynced inside a
commit (p99 of a commit 5.4 ms); checkpoints now run in a thread and on a connection of their own. (4) Full
garbage collections walked every model the SDK and pydantic built at import: a 66–73 ms stop every few hundred
calls; `gc.freeze()` before serving leaves about 15 ms, half as often. (5) The queue's estimate scanned up to
4,096 recent starts per call, and tenacity set up its retry machinery per request (0.13 and 0.16 ms per call under
the profiler); both are now a slice and a plain loop. (6) Replies went to stdout in 4 KB pages, each waking the
reader; one write now when the pipe has room. (7) SQLite's reservation loaded the newest burst's worth of recent
starts (up to 1,000 rows at this bench's plan) into Python on every request; it now reads only the two positions the
rule looks at (the burst-th and the spread's newest start): under py-spy (sampling at 500 Hz, 4,000 calls ten at
once), that query was 10.0 % of the server's samples and is 2.5 % now.

**What remains.** Our HTTP client is not the gap: a keep-alive GET plus JSON decoding of the same page from the same
fake takes 1.23 ms with httpx2 and 1.3 ms with Node's fetch. The gap is CPU per call (the table's last column, from
`/proc/<pid>/stat`), measured unprofiled on 2026-11-25: (1) the state shared across processes (the memory-state row
above is ours without it): seven store operations per miss take about 0.5 ms, one at a time or ten at once (timed
inside the real server over 200 misses and 30 rounds of ten: cache write of the 36 KB body 0.14–0.15 ms, rate
reservation 0.10–0.11 ms, plan update 0.09 ms (a newly learned 1,000/s plan counts clean answers until 1,000 have
come back, so every answer in this bench writes one), spending-cap booking 0.05 ms, lease 0.05 ms, cache look-up and
lease release 0.02–0.03 ms each); each is one short transaction whose commit writes its pages to the WAL, and
WAL checkpoints run in their own thread; (2) parsing the recorded page in-process
(23 results, 108 text fields cleaned by the one sanitizer) 0.37 ms and decoding its 36 KB of JSON 0.10 ms, where the
official server decodes and passes the JSON through; fitting it into the compact text the model reads 0.18 ms;
(3) the Python SDK's dispatch and pydantic models (the floors above) and httpx2's and anyio's per-request Python. Ten
calls at once cost ten times that on one core, where Node's JIT and native JSON serve the official server. Reaching
1.0× beyond the floors would take dropping the shared state (cross-process single flight, one rate budget and one
spending cap for every agent of the user) and the parsed, sanitised compact text, which are what this server is for;
even on memory state ours stays above the official server's own work."""


def _ms(s: Summary) -> str:
    return f"{s.median * 1000:.2f} ms (IQR {s.q1 * 1000:.2f}–{s.q3 * 1000:.2f}; n={s.n})"


def _ratio(spent: float, own: float) -> float:
    return spent / own if own else float("nan")


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def render_overhead(result: Overhead) -> str:
    """The Markdown section for docs/benchmarks.md (``python -m bench`` puts the command above it)."""
    f = result.figures
    names = {
        OURS: "ours (this revision)",
        MEMORY: "ours, `BRAVE_SEARCH_STATE=memory` (no state shared across processes)",
        BASELINE: f"ours at {result.baseline_rev} (before)",
        THEIRS: f"official {result.official_version}",
        PY_FLOOR: "Python SDK floor (trivial async tool, our stdio transport)",
        NODE_FLOOR: "Node SDK floor (trivial tool, the official server's SDK)",
    }
    out = [
        "One session, one fake Brave (real HTTP on 127.0.0.1, the recorded 10-result page, "
        "1,000 requests/s), samples interleaved with the order rotating; ours on the default SQLite state in a "
        "private `XDG_CACHE_HOME`. Ratios are of medians measured in this same run; the machine is shared, so "
        "absolute times move between runs and only the ratios in one run count.\n",
    ]
    out += [f"- {note}" for note in result.notes]
    official = f.get(THEIRS)
    header = (
        "server", "cache miss, round trip", "vs official", "10 at once, wall", "vs official",
        "CPU per call: one at a time / 10 at once",
    )  # fmt: skip
    rows: list[tuple[str, ...]] = []
    for name in (OURS, MEMORY, BASELINE, THEIRS, PY_FLOOR, NODE_FLOOR):
        if name not in f or not f[name].miss:
            continue
        fig = f[name]
        miss, par = summarize(fig.miss), summarize(fig.parallel)
        ratio_miss = f"{miss.median / _median(official.miss):.2f}×" if official else "—"
        ratio_par = f"{par.median / _median(official.parallel):.2f}×" if official else "—"
        cpu = f"{fig.cpu_miss * 1000:.2f} / {fig.cpu_parallel * 1000:.2f} ms"
        rows.append((names[name], _ms(miss), ratio_miss, _ms(par), ratio_par, cpu))
    out += ["", table(header, rows).rstrip("\n")]
    if official and PY_FLOOR in f and NODE_FLOOR in f:
        out.append("")
        for label, attr in (("cache miss", "miss"), ("10 at once", "parallel")):
            py, node = _median(getattr(f[PY_FLOOR], attr)), _median(getattr(f[NODE_FLOOR], attr))
            mine, theirs = _median(getattr(f[OURS], attr)), _median(getattr(official, attr))
            own = theirs - node  # what the official server spends beyond its floor
            memory = ""
            if f.get(MEMORY) and getattr(f[MEMORY], attr):
                alone = _median(getattr(f[MEMORY], attr))
                memory = (
                    f"; on memory state ours spends {(alone - py) * 1000:.2f} ms ({_ratio(alone - py, own):.2f}×), "
                    f"so the state shared across processes costs {(mine - alone) * 1000:.2f} ms"
                )
            out.append(
                f"- **{label}**: the Python SDK's floor is {py * 1000:.2f} ms against the Node SDK's "
                f"{node * 1000:.2f} ms ({(py - node) * 1000:+.2f} ms, the SDKs' own difference). Beyond its floor "
                f"ours spends {(mine - py) * 1000:.2f} ms, the official server {(theirs - node) * 1000:.2f} ms "
                f"({_ratio(mine - py, own):.2f}×){memory}."
            )
    out += ["", FINDINGS]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run and print the section (or serve the Python floor)."""
    parser = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES, help=f"cache misses per server (default {SAMPLES})")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"rounds of 10 at once per server (default {RUNS})")
    parser.add_argument("--baseline", default="", help="git revision measured as 'before' (default: none)")
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.serve_floor:
        return serve_floor()
    configure_logging(prog="bench.overhead")
    result = anyio.run(lambda: run_overhead(max(1, ns.samples), max(1, ns.runs), ns.baseline or None))
    print(render_overhead(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
