"""The bench's targets and verdicts: each figure beside the number it must meet, and the results table's rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .results import BurstRun, TextResult
from .tables import table

STARTUP_MAX_RATIO = 1.05  # issue 17: nothing imported at start that a call does not need yet
TOOLS_LIST_MAX_BYTES = 15_000  # "under 15 KB", read strictly as 15,000 bytes
OFFICIAL_TOOLS_LIST = "111 KB"  # official 2.1.4, as the side-by-side measures it (bench.sidebyside)
TEXT_MAX_BYTES_PER_RESULT = 296  # Brave's official server on the same page of results
MISS_MAX_OVERHEAD_S = 0.003
OFFICIAL_MISS_OVERHEAD = "3.5 ms"
HIT_MAX_INSIDE_S = 0.001
SLOW_BURST_FLOOR_S = 9.0  # ten calls at 1 request/s: the last may start 9 s after the first
SLOW_BURST_TOLERANCE = 0.10
FAST_BURST_MAX_S = 1.0

MET, MISSED, NO_TARGET = "met", "missed", "—"


@dataclass(frozen=True)
class Row:
    """One line of the results table."""

    measurement: str
    result: str
    spread: str
    target: str
    status: str


RESULT_HEADER = ("Measurement", "Result (median)", "Spread", "Target", "Status")


def render_table(rows: Sequence[Row], header: Sequence[str] = RESULT_HEADER) -> str:
    """The rows as a Markdown table (the results table's columns unless ``header`` names others)."""
    return table(header, ((r.measurement, r.result, r.spread, r.target, r.status) for r in rows))


def status_word(met: bool | None) -> str:
    """``met`` / ``missed``, or a dash for figures reported without a target."""
    if met is None:
        return NO_TARGET
    return MET if met else MISSED


def startup_ratio(server_median: float, floor_median: float) -> float:
    """Server start-up as a multiple of the SDK-import floor."""
    if floor_median <= 0:
        raise ValueError("the floor must be a positive time")
    return server_median / floor_median


def judge_startup(server_median: float, floor_median: float) -> bool:
    """Start-up is within 1.05x the floor."""
    return startup_ratio(server_median, floor_median) <= STARTUP_MAX_RATIO


def judge_tools_list(total_bytes: int) -> bool:
    """The tools array is under 15,000 bytes."""
    return total_bytes < TOOLS_LIST_MAX_BYTES


def judge_text(text: TextResult) -> bool:
    """At most 296 bytes per result, every source age shown, and no markup left in the text."""
    return (
        text.results > 0
        and text.per_result <= TEXT_MAX_BYTES_PER_RESULT
        and text.ages_shown == text.ages_expected
        and not text.markup
    )


# A target met by less than this is reported with its causes too: run-to-run noise is about this size.
MARGINAL_S = 0.0003


def judge_miss(miss_median: float, upstream_median: float) -> bool:
    """A cache miss adds at most 3 ms to the upstream's own round trip."""
    return miss_median - upstream_median <= MISS_MAX_OVERHEAD_S


def judge_hit(inside_median: float) -> bool:
    """A cache hit takes under 1 ms inside the server."""
    return inside_median < HIT_MAX_INSIDE_S


def judge_bursts(runs: Sequence[BurstRun], max_wall: float, *, strict: bool) -> bool:
    """Every run: all calls succeeded, no upstream 429, wall time within the limit (``<`` when strict)."""
    if not runs:
        return False
    for run in runs:
        if run.ok != run.calls or run.rate_limited != 0:
            return False
        if run.wall > max_wall or (strict and run.wall == max_wall):
            return False
    return True
