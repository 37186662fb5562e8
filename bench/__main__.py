"""``python -m bench``: measure, print the table, and (unless ``--no-write``) write docs/benchmarks.md.

Exit status: 0 whenever the bench ran, targets met or not (CI does not judge timings on shared
machines); 1 when the bench itself broke; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio

from .logs import configure_logging
from .machine import describe_machine, render_machine_line
from .measure import run_all
from .read_url import run_read_url
from .report import build_rows, render_document
from .results import FULL_PLAN, QUICK_PLAN
from .speed import SpeedResults, run_speed
from .speed_report import render_speed
from .tables import BENCHMARKS_DOC
from .targets import render_table

logger = logging.getLogger("bench")


def build_parser() -> argparse.ArgumentParser:
    """Options of the bench command."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks of brave-search-mcp against a local fake Brave upstream (127.0.0.1 only).",
    )
    parser.add_argument(
        "--quick", action="store_true", help="few repetitions (CI): 3 start-ups, 20 latency samples, one burst each"
    )
    parser.add_argument("--no-write", action="store_true", help=f"print the table only; do not write {BENCHMARKS_DOC}")
    parser.add_argument("--output", type=Path, default=BENCHMARKS_DOC, help="where to write the Markdown report")
    parser.add_argument(
        "--no-speed",
        action="store_true",
        help="leave out the speed part (official server side by side, pipelining, imports, profile, micro, read_url)",
    )
    parser.add_argument("--verbose", action="store_true", help="log progress at DEBUG level")
    return parser


def command_line(argv: Sequence[str]) -> str:
    """The command as a reader would type it to reproduce this run."""
    args = "".join(f" {arg}" for arg in argv)
    if os.environ.get("UV_RUN_RECURSION_DEPTH"):
        return f"uv run --extra dev python -m bench{args}"
    return f"python -m bench{args}"


# Benches of one issue each, run as their own processes in a full run; their output goes into the report.
SIDE_BENCHES: tuple[tuple[str, str], ...] = (
    ("bench.limits", "Rate limits and deadlines (issue 11)"),
    ("bench.fallback", "Fallback to SearXNG and the circuit breaker (issue 13)"),
    ("bench.new_tools", "Context size of all tools (issue 12)"),
    ("bench.state_backends", "Shared state backends (issue 14)"),
    ("bench.http_transport", "HTTP transport (issue 14)"),
    ("bench.bursts", "Bursts beside the official server (issue 22)"),
    ("bench.overhead", "Per-call overhead beside the official server, with each SDK's floor (issue 22)"),
)


def _side_bench(entry: tuple[str, str]) -> str:
    """Run one side bench and return its section (its output, or why it did not run)."""
    module, title = entry
    logger.info("running %s", module)
    try:
        done = subprocess.run([sys.executable, "-m", module], capture_output=True, text=True, timeout=600, check=False)
        body = done.stdout.strip() or f"(no output; exit {done.returncode}: {done.stderr.strip()[-300:]})"
    except subprocess.TimeoutExpired:
        body = "(did not finish within 600 s)"
    if body.startswith("## "):
        body = body.split("\n", 1)[1].lstrip()
    command = f"`uv run --extra dev python -m {module}` (also part of the full `python -m bench`)"
    return f"\n## {title}\n\nCommand: {command}.\n\n{body}\n"


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the bench; see the module docstring for the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    ns = build_parser().parse_args(args_list)
    configure_logging(ns.verbose)
    out = out or sys.stdout
    plan = QUICK_PLAN if ns.quick else FULL_PLAN
    machine = describe_machine()  # before the run, so its load average says how busy the machine was
    try:
        results = anyio.run(lambda: run_all(plan, quick=ns.quick))
        speed: SpeedResults | None = None if ns.no_speed else anyio.run(lambda: run_speed(quick=ns.quick))
        reading = "" if ns.no_speed else anyio.run(run_read_url, ns.quick)
    except KeyboardInterrupt:
        sys.stderr.write("bench: interrupted\n")
        return 130
    except Exception:
        logger.exception("the bench itself failed")
        return 1
    out.write(f"\nbrave-search-mcp bench ({'quick' if ns.quick else 'full'}; {render_machine_line(machine)})\n\n")
    out.write(render_table(build_rows(results)))
    speed_text = render_speed(speed) if speed is not None else ""
    if not ns.quick and not ns.no_speed:
        speed_text += "".join(_side_bench(module) for module in SIDE_BENCHES)
    if reading:
        speed_text += f"\n{reading}"
    out.write(f"\n{speed_text}")
    out.write(
        f"\n{results.elapsed:.0f} s in total. Targets are reported, never enforced (exit 0 unless the bench broke).\n"
    )
    if not ns.no_write:
        document = render_document(results, machine, command_line(args_list), speed_text)
        ns.output.parent.mkdir(parents=True, exist_ok=True)
        ns.output.write_text(document, encoding="utf-8")
        out.write(f"wrote {ns.output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
