"""The speed part of a bench run (issue 17): official server side by side, throughput, imports, profile, micro.

Runs after the original measurements, against one fake of its own; ``--quick`` leaves out the
official server (an npm install and a node process per sample are not a CI smoke test's job).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import server_env

from .callprofile import PROFILE_CALLS, PathProfile, profile_path
from .imports import StartImports, measure_start_imports
from .micro import Timing, load_baseline, run_micro
from .official import ensure_official
from .pipeline import PIPELINE_CALLS, PipelineResult, measure_pipeline
from .results import FAST_RATE
from .serverprofile import ServerProfile, profile_server
from .sidebyside import SIDE_FULL, SideBySide, run_side_by_side
from .upstream import DIRECT_KEY, load_recorded_page, make_fake

logger = logging.getLogger(__name__)

QUICK_SKIP = "official server not run under --quick (npm install and node start-ups are a full-run job)"


@dataclass
class SpeedResults:
    """Everything the speed part measured; any part may be absent (skipped or quick)."""

    quick: bool
    side: SideBySide | None = None
    official_note: str | None = None  # why the official server is absent
    pipeline: PipelineResult | None = None
    imports: StartImports | None = None
    profiles: list[PathProfile] = field(default_factory=list)
    server_profiles: list[ServerProfile] = field(default_factory=list)
    micro: list[Timing] = field(default_factory=list)
    baseline: dict[str, float] = field(default_factory=dict)


async def run_speed(*, quick: bool) -> SpeedResults:
    """Run every speed measurement; the official server only in a full run, skipped with a reason if absent."""
    results = SpeedResults(quick=quick)
    page = load_recorded_page()
    with tempfile.TemporaryDirectory(prefix="brave-bench-speed-") as tmp:
        fake = make_fake(page, rate_per_second=FAST_RATE, keys=(VALID_KEY, DIRECT_KEY))
        with FakeBraveServer(fake) as upstream:
            if quick:
                results.official_note = QUICK_SKIP
            else:
                official = await anyio.to_thread.run_sync(ensure_official)
                if isinstance(official, str):
                    results.official_note = official
                    logger.warning("%s", official)
                logger.info("side by side with the official server")
                results.side = await run_side_by_side(upstream, official, SIDE_FULL)
            env = server_env(upstream.base_url, for_tests=False)
            calls = 200 if quick else PIPELINE_CALLS
            logger.info("pipelining %d cached calls on one session", calls)
            results.pipeline = await measure_pipeline(env, upstream, calls)
            logger.info("start-up imports and mcp_types cost")
            runs, reps = (1, 2) if quick else (3, 7)
            results.imports = await measure_start_imports(env, runs, reps, Path(tmp))
            for kind, count in (("hit", calls), ("miss", 20 if quick else 200)):
                logger.info("profiling the server process: %d calls (cache %s)", count, kind)
                out = Path(tmp) / f"server-{kind}.prof"
                profile = await profile_server(env, upstream, kind, count, out)
                results.server_profiles.append(profile)
    profile_calls = 100 if quick else PROFILE_CALLS
    for kind in ("hit", "miss"):
        logger.info("profiling %d in-process calls (cache %s)", profile_calls, kind)
        results.profiles.append(await profile_path(page, kind, profile_calls))
    logger.info("hot-path micro-benchmarks")
    results.micro = run_micro(3, 0.05) if quick else run_micro()
    results.baseline = load_baseline()
    return results
