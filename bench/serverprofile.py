"""The real server process profiled while it answers many calls: where a round trip's time goes, SDK included.

The in-process profile (``callprofile``) covers our own code; this one runs ``bench.profiled_server``
(the stdio server with cProfile on after its imports) and shows which packages — the MCP SDK,
pydantic, anyio/asyncio, the HTTP client or ours — hold the time per ``tools/call``.
"""

from __future__ import annotations

import pstats
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from testkit.brave.http_server import FakeBraveServer

from .callprofile import ProfileRow, rank
from .hotspots import code_label
from .pipeline import DISTINCT_QUERIES, check_replies, pipeline_arguments, pipelined
from .readings import text_of
from .results import WEB_TOOL
from .rpc import BenchError, spawn_server
from .upstream import REPO_ROOT

PACKAGE_ROOTS = {
    "brave_search_mcp": "ours (brave_search_mcp)",
    "mcp": "MCP SDK (mcp, mcp_types)",
    "mcp_types": "MCP SDK (mcp, mcp_types)",
    "pydantic": "pydantic + pydantic_core",
    "pydantic_core": "pydantic + pydantic_core",
    "anyio": "anyio + asyncio",
    "asyncio": "anyio + asyncio",
    "httpx2": "HTTP client (httpx2, httpcore2, h11)",
    "httpcore2": "HTTP client (httpx2, httpcore2, h11)",
    "h11": "HTTP client (httpx2, httpcore2, h11)",
    "json": "json",
    "logging": "logging",
}


@dataclass(frozen=True)
class ServerProfile:
    """One profiled server run: calls answered, own time per call by package and the top functions."""

    kind: str
    calls: int
    per_call_us: float  # profiled own time of the whole process, per call
    by_package: list[tuple[str, float]]  # label, own µs per call
    top: list[ProfileRow]


def package_of(file: str) -> str:
    """The package group a profiled file belongs to (C functions are grouped apart)."""
    if file.startswith("("):
        return "C builtins (str, re, json, zlib...)"
    root = file.split("/", 1)[0].removesuffix(".py")
    return PACKAGE_ROOTS.get(root, "other (stdlib, testkit...)")


def by_package(entries: Iterable[tuple[str, str, float, float, int]], calls: int) -> list[tuple[str, float]]:
    """Own time per call summed per package group, largest first."""
    totals: dict[str, float] = {}
    for file, _label, own, _total, _count in entries:
        group = package_of(file)
        totals[group] = totals.get(group, 0.0) + own
    return sorted(((group, s / calls * 1e6) for group, s in totals.items()), key=lambda item: -item[1])


def read_entries(path: Path) -> list[tuple[str, str, float, float, int]]:
    """``(file, label, own s, cumulative s, calls)`` per function of a pstats file."""
    stats: Mapping[tuple[str, int, str], tuple[int, int, float, float, object]] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    entries = []
    for (filename, line, name), (_cc, count, own, total, _callers) in stats.items():
        if filename == "~":
            file, label = code_label(name)
        else:
            file, label = _label(filename, line, name)
        entries.append((file, label, own, total, count))
    return entries


def _label(filename: str, line: int, name: str) -> tuple[str, str]:
    code = compile("0", filename, "eval")  # a code object only to reuse code_label's path shortening
    file, _ = code_label(code)
    shown = f"{name} (line {line})" if name.startswith("<") else name
    return file, f"{file}:{shown}"


async def profile_server(
    env: Mapping[str, str], upstream: FakeBraveServer, kind: str, calls: int, out: Path
) -> ServerProfile:
    """Run the profiled server: ``calls`` pipelined hits, or ``calls`` sequential misses; read its profile."""
    argv = [sys.executable, "-m", "bench.profiled_server", str(out)]
    async with spawn_server(env, argv=argv, cwd=REPO_ROOT) as session:
        await session.initialize()
        if kind == "hit":
            for n in range(DISTINCT_QUERIES):
                await session.call_tool(WEB_TOOL, pipeline_arguments(n))
            _, replies = await pipelined(session, calls)
            check_replies(replies)
        else:
            for n in range(calls):
                result, _ = await session.call_tool(WEB_TOOL, {**pipeline_arguments(0), "query": f"profiled miss {n}"})
                if result.get("isError"):
                    raise BenchError(f"profiled miss failed: {text_of(result)[:300]}")
    if not await anyio.Path(out).is_file():
        raise BenchError("the profiled server wrote no profile (did it exit on end of input?)")
    entries = await anyio.to_thread.run_sync(read_entries, out)
    own = sum(entry[2] for entry in entries)
    return ServerProfile(kind, calls, own / calls * 1e6, by_package(entries, calls), rank(entries, calls))
