"""What one bench run measures: the plan (how often), the constants of the calls, and a dataclass per figure."""

from __future__ import annotations

from dataclasses import dataclass, field

from .hotspots import HitProfile

WEB_TOOL = "brave_web_search"
FLOOR_CODE = "from mcp.server.mcpserver import MCPServer"
FLOOR_IMPORT_CODE = FLOOR_CODE + "; import os; os.write(1, b'.')"
TEXT_QUERY = "hello world"  # the query the hello-world page answers
BURST_CALLS = 10
WARMUP_CALLS = 5
MEMORY_CALLS = 200
FAST_RATE = 1000  # requests/second the latency upstream allows: never the bottleneck


@dataclass(frozen=True)
class Plan:
    """How much to repeat each measurement (full run vs the CI's quick run)."""

    startup_reps: int
    latency_samples: int
    slow_bursts: int
    fast_bursts: int
    profile_runs: int


FULL_PLAN = Plan(startup_reps=15, latency_samples=200, slow_bursts=3, fast_bursts=5, profile_runs=3)
QUICK_PLAN = Plan(startup_reps=3, latency_samples=20, slow_bursts=1, fast_bursts=1, profile_runs=1)


@dataclass(frozen=True)
class StartupResult:
    """Spawn-to-``initialize`` times of the server beside the SDK-import floor, measured interleaved (seconds)."""

    server: list[float]
    floor: list[float]
    floor_import: list[float]  # the floor's import alone: spawn to a byte written after it (no interpreter exit)


@dataclass(frozen=True)
class ToolsListResult:
    """Bytes of the ``tools`` array as compact JSON, in total and per tool."""

    total_bytes: int
    per_tool: dict[str, int]


@dataclass(frozen=True)
class TextResult:
    """What the model reads for one 10-result web search, and whether it kept ages and clean snippets."""

    source: str
    text_bytes: int
    structured_bytes: int
    results: int
    ages_expected: int
    ages_shown: int
    markup: list[str]
    text: str

    @property
    def per_result(self) -> float:
        """Text bytes per returned result."""
        return self.text_bytes / self.results if self.results else float("inf")


@dataclass(frozen=True)
class CallLog:
    """The fields of the server's per-call log line that the bench uses."""

    duration_ms: float
    cache_hit: bool | None
    attempts: int


@dataclass(frozen=True)
class LatencyResult:
    """Per-call times (seconds): round trips through stdio, the server's own durations, the bare upstream."""

    miss_rtt: list[float]
    hit_rtt: list[float]
    upstream: list[float]
    miss_inside: list[float]
    hit_inside: list[float]


@dataclass(frozen=True)
class BurstRun:
    """One burst of concurrent calls: outcomes, upstream 429s and wall time (seconds)."""

    calls: int
    ok: int
    rate_limited: int
    upstream_requests: int
    wall: float


@dataclass(frozen=True)
class MemoryResult:
    """Resident memory of the server process (kB) at start and after the calls."""

    calls: int
    hits: int
    misses: int
    hwm_after_init_kb: int
    hwm_kb: int
    rss_kb: int


@dataclass(frozen=True)
class ImportProfile:
    """Import self-times (ms, median over runs) of what the server imports beyond the SDK floor."""

    runs: int
    floor_total_ms: float
    server_total_ms: float
    extra_total_ms: float
    top_extra: list[tuple[str, float]]


@dataclass
class Results:
    """Everything one bench run measured."""

    plan: Plan
    quick: bool
    startup: StartupResult | None = None
    tools_list: ToolsListResult | None = None
    text: TextResult | None = None
    latency: LatencyResult | None = None
    slow_bursts: list[BurstRun] = field(default_factory=list)
    fast_bursts: list[BurstRun] = field(default_factory=list)
    memory: MemoryResult | None = None
    profile: ImportProfile | None = None
    hit_profile: HitProfile | None = None
    elapsed: float = 0.0
