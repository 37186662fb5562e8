"""bench.bursts: the issue-22 burst figures beside the official server. No timing is asserted here: the table is
rendered from constructed figures, and one small real burst checks what is counted (outcomes, the fake's 429s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import SIDE_BENCHES
from bench.bursts import SCENARIOS, Burst, Results, Scenario, _cell, _outcome, render_bursts, run_scenario
from bench.sidebyside import OURS, THEIRS


def _burst(ok: int, calls: int = 10, wall: float = 1.0, limited: int = 0, **codes: int) -> Burst:
    return Burst(calls, ok, dict(codes), limited, calls, wall)


def test_outcomes_are_ok_our_code_or_the_official_plain_error() -> None:
    assert _outcome({"result": {"isError": False, "content": []}}) == "ok"
    failed = {"result": {"isError": True, "structuredContent": {"error": {"code": "RATE_LIMITED"}}}}
    assert _outcome(failed) == "RATE_LIMITED"
    assert _outcome({"result": {"isError": True, "content": [{"type": "text", "text": "429"}]}}) == "error"
    assert _outcome({"error": {"code": -32603}}) == "jsonrpc-error"


def test_a_cell_gives_medians_failures_per_run_and_the_wall_range() -> None:
    cell = _cell([_burst(8, wall=1.0, limited=2, error=2), _burst(10, wall=3.0), _burst(9, wall=2.0, error=1)])
    assert cell == "9/10 ok, 1 error, 0 × 429, wall 2.00 s (1.00–3.00)"  # failures: median of 2, 0, 1 per run
    assert _cell([]) == "—"


def test_the_section_has_every_scenario_side_by_side_and_says_when_the_official_server_is_absent() -> None:
    results = Results(runs=1, official_version="2.1.4")
    for scenario in SCENARIOS:
        results.bursts[scenario.key] = {OURS: [_burst(10)], THEIRS: [_burst(2, limited=8, error=8)]}
    for key in ("c", "c30"):
        results.bursts[key] = {OURS: [_burst(10, wall=0.5), _burst(10, wall=0.1)], THEIRS: [_burst(10)] * 2}
    text = render_bursts(results)
    rows = [line for line in text.splitlines() if line.startswith("| (")]
    assert [row[3] for row in rows] == ["a", "b", "d", "c", "c", "c", "c"]
    assert "| ours | official 2.1.4 |" in text
    assert "2/10 ok, 8 error, 8 × 429" in rows[0]
    assert "wall 0.50 s" in rows[3] and "wall 0.10 s" in rows[4]  # first process, then the second
    absent = render_bursts(Results(runs=1, skipped="official server skipped: node/npm not found on PATH"))
    assert "not run: official server skipped" in absent and "official (not run)" in absent


def test_the_bench_entry_point_runs_the_bursts_in_a_full_run() -> None:
    assert ("bench.bursts", "Bursts beside the official server (issue 22)") in SIDE_BENCHES


@pytest.mark.anyio
async def test_a_small_burst_through_our_real_server_counts_outcomes_and_upstream_requests(tmp_path: Path) -> None:
    small = Scenario("t", "5 calls at once, one pipe write, 1,000/s", 5, 1000, one_write=True)
    found = await run_scenario(small, None, tmp_path, OURS, 0)
    assert (found.calls, found.ok, found.codes, found.upstream_429, found.upstream_requests) == (5, 5, {}, 0, 5)
    assert (tmp_path / "t-0-ours" / "brave-search-mcp").is_dir()  # ours ran on the default SQLite state, here
