"""What server start-up imports, and what the MCP SDK's ``mcp_types`` alone costs of it.

``python -X importtime`` of the real server up to ``initialize`` names the start-up offenders;
spawn-to-exit of ``python -c "import mcp_types"`` beside the bare interpreter and the SDK floor
measures the share of the floor that one package's model building takes.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from .results import FLOOR_CODE
from .rpc import capture_stderr, spawn_server, time_command

TYPES_CODE = "import mcp_types"
BARE_CODE = "pass"
TYPES_PREFIX = "mcp_types"
OUR_PACKAGE = "brave_search_mcp"


@dataclass(frozen=True)
class ImportLine:
    """One ``-X importtime`` line: module, self and cumulative microseconds, nesting depth."""

    name: str
    self_us: int
    cumulative_us: int
    depth: int


@dataclass(frozen=True)
class StartImports:
    """Median import figures of the server start (ms) and of the SDK's ``mcp_types`` (ms and wall seconds)."""

    runs: int
    total_self_ms: float
    top_cumulative: list[tuple[str, float, bool]]  # module, cumulative ms, also imported by the floor
    ours_top: list[tuple[str, float]]  # our own modules by cumulative ms: what our package adds
    types_self_ms: float  # every mcp_types module's self time in the server start
    types_by_module: list[tuple[str, float]]
    bare_wall: list[float]
    types_wall: list[float]
    floor_wall: list[float]


def parse_import_lines(text: str) -> list[ImportLine]:
    """Every ``import time:`` line after the header, in the order Python printed them."""
    lines: list[ImportLine] = []
    for raw in text.splitlines():
        if not raw.startswith("import time:"):
            continue
        parts = raw[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit() or not parts[1].strip().isdigit():
            continue
        name = parts[2].rstrip()
        stripped = name.lstrip(" ")
        lines.append(ImportLine(stripped, int(parts[0]), int(parts[1]), (len(name) - len(stripped)) // 2))
    return lines


def median_by_module(runs: Sequence[Sequence[ImportLine]], cumulative: bool) -> dict[str, float]:
    """Median milliseconds per module over runs (a module missing from a run counts as 0 there)."""
    names: set[str] = set()
    tables: list[dict[str, int]] = []
    for run in runs:
        table: dict[str, int] = {}
        for line in run:
            table.setdefault(line.name, line.cumulative_us if cumulative else line.self_us)
        tables.append(table)
        names.update(table)
    return {name: statistics.median(t.get(name, 0) for t in tables) / 1000 for name in names}


def is_nested(name: str, chosen: Sequence[str]) -> bool:
    """Whether ``name`` is a submodule of one already listed (its cumulative time is inside the parent's)."""
    return any(name.startswith(parent + ".") for parent in chosen)


def top_modules(cumulative: Mapping[str, float], floor: set[str], top: int = 15) -> list[tuple[str, float, bool]]:
    """The largest cumulative imports, skipping submodules of a module already listed."""
    chosen: list[str] = []
    for name, _ in sorted(cumulative.items(), key=lambda item: (-item[1], item[0])):
        if len(chosen) == top:
            break
        if not is_nested(name, chosen) and name != "encodings":
            chosen.append(name)
    return [(name, round(cumulative[name], 1), name in floor) for name in chosen]


def summarize_imports(
    server_runs: Sequence[Sequence[ImportLine]],
    floor_runs: Sequence[Sequence[ImportLine]],
    walls: tuple[list[float], list[float], list[float]],
) -> StartImports:
    """The figures of :class:`StartImports` from parsed runs and the three wall-time samples."""
    if not server_runs or not floor_runs:
        raise ValueError("need at least one server and one floor import profile")
    cumulative = median_by_module(server_runs, cumulative=True)
    own = median_by_module(server_runs, cumulative=False)
    floor_names = {line.name for run in floor_runs for line in run}
    types = sorted(
        ((name, ms) for name, ms in own.items() if name.split(".")[0] == TYPES_PREFIX), key=lambda item: -item[1]
    )
    ours = sorted(
        ((name, ms) for name, ms in cumulative.items() if name.split(".")[0] == OUR_PACKAGE),
        key=lambda item: -item[1],
    )
    bare, types_wall, floor_wall = walls
    return StartImports(
        runs=len(server_runs),
        total_self_ms=sum(own.values()),
        top_cumulative=top_modules(cumulative, floor_names),
        ours_top=[(name, round(ms, 1)) for name, ms in ours[:8]],
        types_self_ms=sum(ms for _, ms in types),
        types_by_module=[(name, round(ms, 1)) for name, ms in types[:5]],
        bare_wall=bare,
        types_wall=types_wall,
        floor_wall=floor_wall,
    )


async def measure_start_imports(env: Mapping[str, str], runs: int, reps: int, work_dir: Path) -> StartImports:
    """``-X importtime`` of the server start and of the floor; wall time of bare, ``mcp_types`` and floor."""
    server_runs: list[list[ImportLine]] = []
    floor_runs: list[list[ImportLine]] = []
    for run in range(runs):
        log = work_dir / f"start-importtime-{run}.log"
        async with spawn_server(env, stderr_path=log, python_flags=("-X", "importtime")) as session:
            await session.initialize()
        server_runs.append(parse_import_lines(await anyio.Path(log).read_text(encoding="utf-8")))
        floor_text = await capture_stderr([sys.executable, "-X", "importtime", "-c", FLOOR_CODE], env)
        floor_runs.append(parse_import_lines(floor_text))
    samples: tuple[list[float], list[float], list[float]] = ([], [], [])
    codes = (BARE_CODE, TYPES_CODE, FLOOR_CODE)
    for code in codes:  # warm-up
        await time_command([sys.executable, "-c", code], env)
    for rep in range(reps):
        for offset in range(len(codes)):
            index = (rep + offset) % len(codes)
            samples[index].append(await time_command([sys.executable, "-c", codes[index]], env))
    return summarize_imports(server_runs, floor_runs, samples)
