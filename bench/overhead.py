"""Issue 22 item 3: per-call overhead beside the official server, with each SDK's own floor and a baseline revision.

``python -m bench.overhead`` (also part of the full ``python -m bench``) runs, in one session against one fake
Brave (real HTTP, the recorded 10-result page, 1,000 requests/s), samples interleaved and the order rotating:

- ours as a user gets it (the default SQLite state, in a private ``XDG_CACHE_HOME``);
- ours at ``--baseline REV`` when given (none by default), extracted with ``git archive``, same settings: the
  *before* of every figure, measured in the same session as the *after*;
- Brave's official server (``bench.official``);
- each SDK's floor: one trivial async tool answering 4,000 bytes of text, on the Python SDK over our stdio
  transport (``--serve-floor``, what our server runs on), and on the Node SDK the official server installed
  (``bench/node/floor-server.mjs``). What a server spends beyond its SDK's floor is its own;
- the Python SDK carrying our own reply (``--serve-reply-floor``): our real server, every call after its first
  answered with that first call's reply, so the SDK's dispatch, our stdio transport and the serialising of a real
  10-result envelope, and nothing of the tool's own work.

Figures: one web search, a cache miss (round trip over stdio), and 10 distinct searches written at once (wall from
the first write to the last answer); the CPU time (user + system) each server process used per call meanwhile,
and how much of it on its main thread (``bench.proc_cpu``).
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
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

from .logs import configure_logging
from .official import OfficialServer, ensure_official
from .overhead_findings import FINDINGS
from .proc_cpu import per_call, reading
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
REPLY_FLOOR = "ours-reply-floor"  # our server answering every call with its first reply: the SDK carrying ours
FLOOR_TOOL = "echo"
FLOOR_BYTES = 4000  # about the size of the text a 10-result search answers with
NODE_FLOOR_SCRIPT = Path(__file__).resolve().parent / "node" / "floor-server.mjs"
SAMPLES, RUNS, WARMUP, PARALLEL = 100, 40, 5, 10


@dataclass
class Figures:
    """One server's samples (seconds)."""

    miss: list[float] = field(default_factory=list)
    parallel: list[float] = field(default_factory=list)
    cpu_miss: float = 0.0  # CPU seconds (user + system) of the server process per call, misses one at a time
    cpu_parallel: float = 0.0  # ... and in the rounds of 10 at once
    main_miss: float | None = None  # of which on its main thread (None: the kernel did not say)
    main_parallel: float | None = None


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


def serve_reply_floor() -> int:
    """Our server, each call after the first answered with the first one's outcome (``--serve-reply-floor``): what
    the SDK and our stdio transport cost to carry our real reply, beside the trivial tool's floor."""
    from brave_search_mcp.faces.cli import main as serve
    from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
    from brave_search_mcp.usecases.contract import Progress

    real = ToolBoundary.call
    kept: list[ToolOutcome] = []

    async def replay(
        self: ToolBoundary, name: str, arguments: Mapping[str, Any] | None, *, progress: Progress | None = None
    ) -> ToolOutcome:
        if not kept:  # the bench's warm-up calls one at a time, so exactly one call reaches the tool
            kept.append(await real(self, name, arguments, progress=progress))
        return kept[0]

    ToolBoundary.call = replay  # type: ignore[method-assign]  # a process of its own that serves only this floor
    return serve(["serve"])


def reply_floor_contender(ours: Contender, cache_home: Path) -> Contender:
    """Ours with the tool's work taken out (``serve_reply_floor``), on the same fake and settings."""
    argv = [sys.executable, "-m", "bench.overhead", "--serve-reply-floor"]
    return replace(
        ours, name=REPLY_FLOOR, argv=argv, cwd=REPO_ROOT, env={**ours.env, "XDG_CACHE_HOME": str(cache_home)}
    )


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
        floors = [*floor_contenders(installed), reply_floor_contender(ours, tmp / REPLY_FLOOR)]
        everyone = web + floors
        figures = {c.name: Figures() for c in everyone}
        async with AsyncExitStack() as stack:
            sessions = {c.name: await stack.enter_async_context(started(c)) for c in everyone}

            async def miss(c: Contender, query: str) -> float:
                expect = None if c in floors else True  # a floor has no fake behind it (or uses it once)
                return await timed_call(sessions[c.name], c, query, upstream, expect_request=expect)

            async def burst(c: Contender, label: str) -> float:
                session = sessions[c.name]
                _, wall = await parallel_wall(session, c.arguments, label, tool=c.tool, calls=PARALLEL, check=c.name)
                return wall

            for c in everyone:
                for n in range(WARMUP):
                    await miss(c, f"warm-up {n}")
            before = {c.name: reading(sessions[c.name].pid) for c in everyone}
            for k in range(samples):
                for c in everyone[k % len(everyone) :] + everyone[: k % len(everyone)]:
                    figures[c.name].miss.append(await miss(c, f"overhead {k}"))
            middle = {c.name: reading(sessions[c.name].pid) for c in everyone}
            for r in range(runs):
                for c in everyone[r % len(everyone) :] + everyone[: r % len(everyone)]:
                    figures[c.name].parallel.append(await burst(c, f"overhead parallel {r}"))
            for c in everyone:
                fig, after = figures[c.name], reading(sessions[c.name].pid)
                fig.cpu_miss, fig.main_miss = per_call(before[c.name], middle[c.name], samples)
                fig.cpu_parallel, fig.main_parallel = per_call(middle[c.name], after, runs * PARALLEL)
    return Overhead(figures, notes, baseline, installed.version if installed else None)


def _ms(s: Summary) -> str:
    return f"{s.median * 1000:.2f} ms (IQR {s.q1 * 1000:.2f}–{s.q3 * 1000:.2f}; n={s.n})"


def _ratio(spent: float, own: float) -> float:
    return spent / own if own else float("nan")


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _measured(figures: dict[str, Figures], name: str, attr: str) -> float | None:
    """The median of one server's samples of one kind, or None when that server did not run."""
    samples: list[float] = getattr(figures[name], attr) if name in figures else []
    return _median(samples) if samples else None


def _where_cpu_runs(f: dict[str, Figures]) -> str | None:
    """Ten at once, how much of each server's CPU per call its main thread spends (the rest overlaps with it)."""
    ours, theirs = f.get(OURS), f.get(THEIRS)
    if ours is None or theirs is None or ours.main_parallel is None or theirs.main_parallel is None:
        return None
    mine, their_main = ours.main_parallel, theirs.main_parallel
    helpers = max(0.0, theirs.cpu_parallel - their_main)
    share = helpers / theirs.cpu_parallel if theirs.cpu_parallel else 0.0
    floors = ""
    py, node = f.get(PY_FLOOR), f.get(NODE_FLOOR)
    if py is not None and node is not None and py.main_parallel is not None and node.main_parallel is not None:
        floors = (
            f" (the SDKs' floors: {py.main_parallel * 1000:.2f} ms on the Python floor's main thread, "
            f"{node.main_parallel * 1000:.2f} ms on the Node floor's)"
        )
    return (
        f"- **where the CPU runs, 10 at once**: the official server spends {their_main * 1000:.2f} ms of CPU a call on "
        f"its main thread and {helpers * 1000:.2f} ms on its other threads ({share:.0%} of its CPU off the main "
        f"thread); ours spends {mine * 1000:.2f} ms on its main thread and "
        f"{max(0.0, ours.cpu_parallel - mine) * 1000:.2f} ms on others{floors}. Calls that queue up wait on the main "
        f"thread, where ours does {_ratio(mine, their_main):.2f}× the official server's work per call."
    )


def render_overhead(result: Overhead) -> str:
    """The Markdown section for docs/benchmarks.md (``python -m bench`` puts the command above it)."""
    f = result.figures
    names = {
        OURS: "ours (this revision)",
        MEMORY: "ours, `BRAVE_SEARCH_STATE=memory` (no state shared across processes)",
        BASELINE: f"ours at {result.baseline_rev} (before)",
        THEIRS: f"official {result.official_version}",
        PY_FLOOR: "Python SDK floor (trivial async tool, our stdio transport)",
        REPLY_FLOOR: "Python SDK carrying our reply (our server, each call answered with its first reply)",
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
        "CPU per call: one at a time / 10 at once (on the main thread)",
    )  # fmt: skip
    rows: list[tuple[str, ...]] = []
    for name in (OURS, MEMORY, BASELINE, THEIRS, PY_FLOOR, REPLY_FLOOR, NODE_FLOOR):
        if name not in f or not f[name].miss:
            continue
        fig = f[name]
        miss, par = summarize(fig.miss), summarize(fig.parallel)
        ratio_miss = f"{miss.median / _median(official.miss):.2f}×" if official else "—"
        ratio_par = f"{par.median / _median(official.parallel):.2f}×" if official else "—"
        cpu = f"{fig.cpu_miss * 1000:.2f} / {fig.cpu_parallel * 1000:.2f} ms"
        if fig.main_miss is not None and fig.main_parallel is not None:
            cpu += f" ({fig.main_miss * 1000:.2f} / {fig.main_parallel * 1000:.2f})"
        rows.append((names[name], _ms(miss), ratio_miss, _ms(par), ratio_par, cpu))
    out += ["", table(header, rows).rstrip("\n")]
    if official and PY_FLOOR in f and NODE_FLOOR in f:
        out.append("")
        for label, attr in (("cache miss", "miss"), ("10 at once", "parallel")):
            py, node = _median(getattr(f[PY_FLOOR], attr)), _median(getattr(f[NODE_FLOOR], attr))
            mine, theirs = _median(getattr(f[OURS], attr)), _median(getattr(official, attr))
            own = theirs - node  # what the official server spends beyond its floor
            alone, reply = _measured(f, MEMORY, attr), _measured(f, REPLY_FLOOR, attr)
            memory = carried = ""
            if alone is not None:
                memory = (
                    f"; on memory state ours spends {(alone - py) * 1000:.2f} ms ({_ratio(alone - py, own):.2f}×), "
                    f"so the state shared across processes costs {(mine - alone) * 1000:.2f} ms"
                )
            if reply is not None:  # no ratio to the official server: its figure still carries its own reply
                carried = (
                    f" Carrying our own reply the Python SDK takes {reply * 1000:.2f} ms ({(reply - py) * 1000:+.2f} "
                    f"ms against its trivial floor); beyond that, the tool's own work is "
                    f"{(mine - reply) * 1000:.2f} ms."
                )
            out.append(
                f"- **{label}**: the Python SDK's floor is {py * 1000:.2f} ms against the Node SDK's "
                f"{node * 1000:.2f} ms ({(py - node) * 1000:+.2f} ms, the SDKs' own difference). Beyond its floor "
                f"ours spends {(mine - py) * 1000:.2f} ms, the official server {(theirs - node) * 1000:.2f} ms "
                f"({_ratio(mine - py, own):.2f}×){memory}.{carried}"
            )
    threads = _where_cpu_runs(f)
    if threads:
        out.append(threads)
    out += ["", FINDINGS]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run and print the section (or serve the Python floor)."""
    parser = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES, help=f"cache misses per server (default {SAMPLES})")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"rounds of 10 at once per server (default {RUNS})")
    parser.add_argument("--baseline", default="", help="git revision measured as 'before' (default: none)")
    parser.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-reply-floor", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.serve_floor:
        return serve_floor()
    if ns.serve_reply_floor:
        return serve_reply_floor()
    configure_logging(prog="bench.overhead")
    result = anyio.run(lambda: run_overhead(max(1, ns.samples), max(1, ns.runs), ns.baseline or None))
    print(render_overhead(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
