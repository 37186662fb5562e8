"""Where a cache hit's time goes: the same call profiled in-process, so a missed target names its cause."""

from __future__ import annotations

import cProfile
import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import Any

from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from testkit.brave.brave import VALID_KEY
from testkit.tools import tool_boundary

from .upstream import make_fake

WARMUP = 20
_PATH_TAILS = (
    re.compile(r".*/site-packages/(.+)$"),
    re.compile(r".*/src/(brave_search_mcp/.+)$"),
    re.compile(r".*/lib/python3\.\d+/(.+)$"),
)


@dataclass(frozen=True)
class HotSpot:
    """One function's own time (callees excluded) across the profiled calls."""

    label: str
    share: float  # of all own time recorded
    own_us_per_call: float  # microseconds per tool call, under the profiler (which inflates it)


@dataclass(frozen=True)
class HitProfile:
    """A profile of repeated cache hits through ``ToolBoundary.call`` (no MCP framing, no HTTP)."""

    calls: int
    per_call_ms: float  # without the profiler
    spots: list[HotSpot]
    by_file: list[HotSpot]


BUILTINS_FILE = "(C code: str, re, json, unicodedata...)"


def code_label(code: CodeType | str) -> tuple[str, str]:
    """``(file, function)`` for a profiler entry: short paths, line numbers for anonymous code, builtins grouped."""
    if isinstance(code, str):
        return BUILTINS_FILE, code
    path = code.co_filename
    for pattern in _PATH_TAILS:
        match = pattern.match(path)
        if match:
            path = match.group(1)
            break
    name = code.co_name
    if name.startswith("<"):  # <genexpr>, <listcomp>, <lambda>: several per file, so say which
        name = f"{name} (line {code.co_firstlineno})"
    return path, f"{path}:{name}"


def hot_spots(
    entries: Iterable[tuple[str, str, float]], calls: int, top: int = 10
) -> tuple[list[HotSpot], list[HotSpot]]:
    """Own time of ``(file, function, seconds)`` entries summed per function and per file, largest first."""
    if calls <= 0:
        raise ValueError("calls must be positive")
    per_function: dict[str, float] = {}
    per_file: dict[str, float] = {}
    for file, function, seconds in entries:
        per_function[function] = per_function.get(function, 0.0) + seconds
        per_file[file] = per_file.get(file, 0.0) + seconds
    total = sum(per_function.values())
    if total <= 0:
        return [], []

    def ranked(values: Mapping[str, float]) -> list[HotSpot]:
        order = sorted(values.items(), key=lambda item: (-item[1], item[0]))[:top]
        return [HotSpot(label, seconds / total, seconds / calls * 1e6) for label, seconds in order]

    return ranked(per_function), ranked(per_file)


async def profile_hits(page: Mapping[str, Any] | None, args: Mapping[str, Any], tool: str, calls: int) -> HitProfile:
    """Time ``calls`` cache hits in-process, then profile as many again with cProfile."""
    fake = make_fake(page, rate_per_second=1000, keys=(VALID_KEY,))
    settings = Settings(
        api_key=SecretStr(VALID_KEY),
        api_key_source="BRAVE_SEARCH_API_KEY",
        base_url="http://127.0.0.1:9",  # never contacted: the mock transport answers
        rate_limit=1000.0,
        burst=1000,
    )
    package_logger = logging.getLogger("brave_search_mcp")
    saved_level = package_logger.level
    package_logger.setLevel(logging.WARNING)  # the per-call INFO line is not part of duration_ms
    try:
        async with BraveClient(settings, transport=fake.mock_transport()) as client:
            service = tool_boundary(settings, client)
            first = await service.call(tool, dict(args))
            if first.is_error:
                raise RuntimeError(f"in-process call failed: {first.text[:300]}")
            for _ in range(WARMUP):
                await service.call(tool, dict(args))
            started = time.perf_counter()
            for _ in range(calls):
                await service.call(tool, dict(args))
            per_call_ms = (time.perf_counter() - started) / calls * 1000
            profiler = cProfile.Profile()
            profiler.enable()
            try:
                for _ in range(calls):
                    await service.call(tool, dict(args))
            finally:
                profiler.disable()
    finally:
        package_logger.setLevel(saved_level)
    entries = [(*code_label(entry.code), entry.inlinetime) for entry in profiler.getstats()]
    spots, by_file = hot_spots(entries, calls)
    return HitProfile(calls=calls, per_call_ms=per_call_ms, spots=spots, by_file=by_file)
