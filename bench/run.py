"""One bench run: which parts, how often, and everything they measured (the report renders it)."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio

from testkit.brave.http_server import FakeBraveServer

from .basics import Calls, Sizes, Startup, measure_calls, measure_sizes, measure_startup
from .bursts import Burst, run_bursts
from .docs import DocsResult, measure_docs
from .extraction import ExtractionResult, measure_extraction
from .fleet import FleetResults, run_fleets
from .official import INSTALL_TIMEOUT, ensure_official
from .pipeline import PIPELINE_CALLS, PipelineResult, measure_pipeline
from .render import RenderResult, measure_render
from .servers import our_env, ours, started
from .session import SessionResults, run_sessions
from .upstream import make_fake

logger = logging.getLogger(__name__)

PARTS = ("startup", "calls", "memory", "bursts", "render", "session", "fleet")
EXTRACTION = "extraction"  # runs only on a checkout of the benchmark (--aeb PATH): it is not in this repository
DOCS = "docs"  # real documentation pages from Debian's packages: runs only when asked (--only docs)
FAST = 1000  # requests per second the fake allows where the plan must never be what is measured
QUICK_INSTALL_TIMEOUT = 90.0  # seconds npm may take under --quick (CI) before the official server is skipped


@dataclass(frozen=True)
class Plan:
    """How often each part repeats: a full run, or the CI's quick one."""

    startup_reps: int
    call_samples: int
    burst_runs: int
    session_runs: int
    render_runs: int = 1


FULL = Plan(startup_reps=15, call_samples=200, burst_runs=3, session_runs=3, render_runs=3)
QUICK = Plan(startup_reps=3, call_samples=20, burst_runs=1, session_runs=1, render_runs=1)


@dataclass
class Results:
    """Everything one run measured; a part left out stays empty."""

    plan: Plan
    quick: bool
    startup: Startup | None = None
    sizes: Sizes | None = None
    calls: Calls | None = None
    memory: PipelineResult | None = None
    bursts: list[Burst] = field(default_factory=list)
    session: SessionResults | None = None
    render: RenderResult | None = None
    fleet: FleetResults | None = None
    extraction: ExtractionResult | None = None
    docs: DocsResult | None = None
    elapsed: float = 0.0


async def run_all(
    plan: Plan, *, quick: bool, parts: Collection[str] = PARTS, official: bool = True, aeb: Path | None = None
) -> Results:
    """Each part asked for, in order; the official server (session) installed with npm unless ``official`` is off;
    the extraction benchmark when ``aeb`` names its checkout."""
    results = Results(plan=plan, quick=quick)
    begin = time.perf_counter()
    if aeb is not None and EXTRACTION in parts:
        results.extraction = await measure_extraction(aeb)
    if DOCS in parts:
        results.docs = await anyio.to_thread.run_sync(measure_docs)
    with tempfile.TemporaryDirectory(prefix="brave-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        with FakeBraveServer(make_fake(FAST)) as upstream:
            if "startup" in parts:
                logger.info("start-up beside the SDK floor, %d repetitions", plan.startup_reps)
                results.startup = await measure_startup(our_env(upstream.base_url, tmp / "startup"), plan.startup_reps)
            if "calls" in parts:
                logger.info("sizes, then %d misses and hits", plan.call_samples)
                async with started(ours(upstream.base_url, tmp / "calls")) as session:
                    results.sizes = await measure_sizes(session)
                    results.calls = await measure_calls(session, upstream, plan.call_samples)
            if "memory" in parts:
                logger.info("memory after %d pipelined calls", PIPELINE_CALLS)
                results.memory = await measure_pipeline(our_env(upstream.base_url, tmp / "memory"), upstream)
        if "bursts" in parts:
            results.bursts = await run_bursts(plan.burst_runs, tmp / "bursts")
        if "render" in parts:
            logger.info("app shells rendered through read_url, %d run(s)", plan.render_runs)
            results.render = await measure_render(plan.render_runs, tmp / "render")
    if "session" in parts:
        install = partial(ensure_official, timeout=QUICK_INSTALL_TIMEOUT if quick else INSTALL_TIMEOUT)
        found = await anyio.to_thread.run_sync(install) if official else "official server left out (--no-official)"
        if isinstance(found, str):
            logger.warning("%s", found)
        results.session = await run_sessions(found, plan.session_runs)
    if "fleet" in parts:
        logger.info("the fleet: %s", "three replicas on one Redis, twenty agents")
        results.fleet = await run_fleets(quick=quick)
    results.elapsed = time.perf_counter() - begin
    return results
