"""Where one tool call's time goes: 1,000 calls in-process under cProfile, hits and misses apart.

Each call runs what the server runs per ``tools/call`` short of the SDK's own dispatch: the tool
boundary (validation, parameters, client and cache, parsing, fitting, envelope) then the
``CallToolResult`` and its JSON encoding, against the fake's in-memory transport.
"""

from __future__ import annotations

import cProfile
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2

from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.settings import make_settings
from testkit.tools import tool_boundary

from . import hot
from .hotspots import code_label
from .sidebyside import our_arguments
from .upstream import make_fake

WEB_TOOL = "brave_web_search"
PROFILE_CALLS = 1000
WARMUP = 20
# (file tail, function) of the per-call stages, reported as cumulative time per call.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("validation (WebSearchArgs.model_validate)", "brave_search_mcp/tools/boundary.py", "validate_arguments"),
    ("parameters (prepare_search)", "brave_search_mcp/brave/params.py", "prepare_search"),
    ("client + cache (BraveClient.get)", "brave_search_mcp/brave/client.py", "get"),
    ("parse (parse_answer)", "brave_search_mcp/brave/results.py", "parse_answer"),
    ("render (fit_to_limits)", "brave_search_mcp/render/compact.py", "fit_to_limits"),
    ("envelope dump (Envelope.dump)", "brave_search_mcp/models/envelopes.py", "dump"),
    ("CallToolResult (to_call_result)", "brave_search_mcp/faces/mcp_server.py", "_to_result"),
    ("JSON encoding (model_dump_json)", "bench/callprofile.py", "encode_response"),
)


@dataclass(frozen=True)
class ProfileRow:
    """One function: own and cumulative time per call (µs, under the profiler)."""

    label: str
    own_us: float
    cumulative_us: float
    calls_per_call: float


@dataclass(frozen=True)
class PathProfile:
    """One kind of call (cache hit or miss): time per call without the profiler, then the profile."""

    kind: str
    calls: int
    per_call_ms: float
    profiled_per_call_ms: float
    top: list[ProfileRow]
    stages: list[tuple[str, float]]  # label, cumulative µs per call (under the profiler)


def encode_response(outcome: hot.ToolOutcome) -> bytes:
    """The ``CallToolResult`` as JSON bytes, as a response body leaves the server."""
    return hot.to_call_result(outcome).model_dump_json(by_alias=True, exclude_none=True).encode()


def rank(entries: Iterable[tuple[str, str, float, float, int]], calls: int, top: int = 10) -> list[ProfileRow]:
    """``(file, function, own s, cumulative s, call count)`` entries summed per function, by own time."""
    if calls <= 0:
        raise ValueError("calls must be positive")
    own: dict[str, list[float]] = {}
    for _file, label, inline, total, count in entries:
        row = own.setdefault(label, [0.0, 0.0, 0.0])
        row[0] += inline
        row[1] = max(row[1], total)  # the same code seen twice (recursion) keeps its outer cumulative
        row[2] += count
    order = sorted(own.items(), key=lambda item: (-item[1][0], item[0]))[:top]
    return [ProfileRow(label, v[0] / calls * 1e6, v[1] / calls * 1e6, v[2] / calls) for label, v in order]


def stage_times(entries: Iterable[tuple[str, str, float, float, int]], calls: int) -> list[tuple[str, float]]:
    """Cumulative µs per call of each named stage (0 when the stage did not run, e.g. parse on a hit)."""
    totals = dict.fromkeys((stage for stage, _, _ in STAGES), 0.0)
    for file, label, _inline, total, _count in entries:
        for stage, tail, function in STAGES:
            if file.endswith(tail) and label == f"{file}:{function}":
                totals[stage] = max(totals[stage], total)
    return [(stage, seconds / calls * 1e6) for stage, seconds in totals.items()]


@contextmanager
def quiet_package() -> Iterator[None]:
    """Silence the per-call INFO log line: a log handler's cost belongs to deployment, not to the call."""
    package = logging.getLogger("brave_search_mcp")
    saved = package.level
    package.setLevel(logging.WARNING)
    try:
        yield
    finally:
        package.setLevel(saved)


def replay_transport(fake: FakeBrave) -> httpx2.MockTransport:
    """The fake answers the first request; every later one gets the same bytes (gzip and JSON encoded once).

    So a miss's profile holds our client's work, not the fake's in-process gzip and ``json.dumps``.
    """
    recorded: list[tuple[list[tuple[str, str]], bytes]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        if not recorded:
            reply = fake.handle(
                request.method, request.url.path, list(request.url.params.multi_items()), dict(request.headers.items())
            )
            if reply.status != 200:
                raise RuntimeError(f"the fake answered {reply.status}: {reply.body[:200]!r}")
            recorded.append((list(reply.headers), reply.body))
        headers, body = recorded[0]
        return httpx2.Response(200, headers=headers, content=body, request=request)

    return httpx2.MockTransport(handler)


async def _run(boundary: hot.ToolBoundary, queries: list[str]) -> None:
    for query in queries:
        outcome = await boundary.call(WEB_TOOL, our_arguments(query))
        if outcome.is_error:
            raise RuntimeError(f"in-process call failed: {outcome.text[:300]}")
        encode_response(outcome)


async def profile_path(page: Mapping[str, Any] | None, kind: str, calls: int = PROFILE_CALLS) -> PathProfile:
    """Time then profile ``calls`` hits (one warmed query) or misses (a new query each time)."""
    fake = make_fake(page, rate_per_second=100_000, keys=(VALID_KEY,))
    settings = make_settings(base_url="http://127.0.0.1:9", cache_size=4 * calls + 64)

    def queries(round_: str) -> list[str]:
        return ["hello world"] * calls if kind == "hit" else [f"{round_} miss {n}" for n in range(calls)]

    with quiet_package():
        async with hot.BraveClient(settings, transport=replay_transport(fake)) as client:
            boundary = tool_boundary(settings, client)
            await _run(boundary, ["hello world"] + [f"warm {n}" for n in range(WARMUP)])
            started = time.perf_counter()
            await _run(boundary, queries("timed"))
            per_call_ms = (time.perf_counter() - started) / calls * 1000
            profiler = cProfile.Profile()
            started = time.perf_counter()
            profiler.enable()
            try:
                await _run(boundary, queries("profiled"))
            finally:
                profiler.disable()
            profiled_ms = (time.perf_counter() - started) / calls * 1000
    entries = [
        (*code_label(entry.code), entry.inlinetime, entry.totaltime, entry.callcount) for entry in profiler.getstats()
    ]
    return PathProfile(kind, calls, per_call_ms, profiled_ms, rank(entries, calls), stage_times(entries, calls))
