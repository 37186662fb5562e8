"""The fleet's script, distinct count, ideal floor and section (bench/fleet.py); the run itself is the bench's."""

from __future__ import annotations

from bench.fleet import (
    AGENTS,
    FLEET_HEADING,
    KILLED,
    PLAIN,
    WARM,
    FleetResults,
    FleetRun,
    agent_script,
    distinct_queries,
    ideal_floor,
    render_fleet,
    window_floor,
)
from bench.session import SCRIPT
from brave_search_mcp.ratelimit.plan import horizon


def test_each_agent_shares_half_its_distinct_queries_with_every_other() -> None:
    one, two = agent_script(0), agent_script(1)
    assert [len(r) for r in one] == [len(r) for r in SCRIPT]  # the same rounds, 26 searches
    mine, theirs = {q for r in one for q in r}, {q for r in two for q in r}
    assert len(mine) == 18 and len(mine & theirs) == 9  # half shared, half its own
    assert distinct_queries() == 9 + AGENTS * 9 == 189


def test_the_ideal_floor_is_the_slowest_agents_sum_of_round_maxima() -> None:
    floor = ideal_floor(trials=200)
    assert floor == ideal_floor(trials=200)  # seeded: the same every run
    rounds_with_news = sum(1 for n, r in enumerate(SCRIPT) if set(r) - {q for s in SCRIPT[:n] for q in s})
    assert 0.30 * rounds_with_news < floor < 0.65 * rounds_with_news  # between every fetch's least and most


def test_the_section_reports_every_run_against_the_floor_and_the_warm_run() -> None:
    runs = [
        FleetRun(PLAIN, 5.0, 520, 0, 0, 189, 189, 189, 189, 0.3),
        FleetRun(KILLED, 5.5, 520, 0, 1, 195, 189, 196, 196, 0.6),
        FleetRun(WARM, 4.9, 520, 0, 0, 189, 189, 189, 189, 0.2),
    ]
    text = render_fleet(FleetResults(runs, 4.6), "python -m bench --only fleet")
    assert text.startswith(FLEET_HEADING)
    assert "The fake Brave runs in its own process, as Brave is another machine." in text  # not the agents'
    assert "| new key | 5.00 s | 1.09× | 1.02× | 0 / 520 | 0 | 189 / 189 (1.000×) | 189 | 189 | 0.3 s |" in text
    assert "195 / 189 (1.032×)" in text and "`python -m bench --only fleet`" in text


def test_repeated_runs_report_the_median_wall_with_its_range_and_every_run_s_counts() -> None:
    runs = [
        FleetRun(PLAIN, 5.0, 520, 0, 0, 189, 189, 189, 189, 0.3),
        FleetRun(PLAIN, 5.6, 520, 1, 2, 190, 189, 189, 189, 0.3),
        FleetRun(PLAIN, 5.2, 520, 0, 0, 189, 189, 189, 189, 0.2),
    ]
    text = render_fleet(FleetResults(runs, 4.6), "python -m bench --only fleet")
    row = next(line for line in text.splitlines() if line.startswith("| new key"))
    assert row.startswith("| new key (×3) | 5.20 s (5.00–5.60) | 1.13× | - | 1 / 1560 | 0 · 2 · 0 |")
    assert "189 / 189 (1.000×) · 190 / 189 (1.005×) · 189 / 189 (1.000×)" in row


def test_the_plan_s_window_costs_the_ideal_agents_time_in_the_rounds_of_forty_new_queries() -> None:
    """Rounds 2 and 3 ask 41 and 42 new queries: within 50 starts per window, the second waits for the first's
    starts to age out. The floor within the window is above the ideal one, and below it plus one window."""
    floor, within = ideal_floor(trials=200), window_floor(trials=200)
    assert within == window_floor(trials=200)  # seeded
    assert floor + 0.2 < within < floor + horizon(50, 50)
    text = render_fleet(
        FleetResults([FleetRun(PLAIN, 5.0, 520, 0, 0, 189, 189, 189, 189, 0.3)], 4.6, window_floor=5.3), "x"
    )
    assert "take 5.30 s (1.15× the floor)" in text
