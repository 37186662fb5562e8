"""docs/benchmarks.md as the bench writes it: each figure beside its target, the parts in order, nothing by hand."""

from __future__ import annotations

from pathlib import Path

from bench.basics import Calls, Sizes, Startup
from bench.bursts import Burst
from bench.machine import Machine
from bench.pipeline import PipelineResult
from bench.render import RenderResult
from bench.report import (
    MET,
    MISSED,
    RENDER_HEADING,
    basics_rows,
    burst_rows,
    memory_row,
    render_document,
    render_render,
)
from bench.run import QUICK, Results
from bench.servers import OURS, THEIRS
from bench.session import SessionResults, SessionRun
from bench.tables import table

MACHINE = Machine(
    date="2026-01-01 00:00 UTC",
    cpu_model="Test CPU",
    logical_cpus=4,
    ram_bytes=8 * 1024**3,
    os="Linux",
    python="CPython 3.11.7",
    packages={"mcp": "2.3.0"},
    load_average=(0.5, 0.25, 0.125),
)


def _burst(key: str, calls: int, wall: float, ok: int | None = None, limited: int = 0) -> Burst:
    ok = calls if ok is None else ok
    return Burst(key, calls, ok, {"RATE_LIMITED": calls - ok} if ok < calls else {}, limited, calls, wall)


def _results() -> Results:
    sizes = Sizes(tools_bytes=11_000, tools=8, text_bytes=2_650, results=10, ages_expected=9, ages_shown=9, markup=[])
    session = SessionResults(official_version="2.1.4")
    for rps, billed_theirs in ((20, 26), (1, 3)):
        session.runs[rps] = {
            OURS: [SessionRun(OURS, rps, 2.2, 26, 0, 18, 18, 0, [0.25] * 26)],
            THEIRS: [SessionRun(THEIRS, rps, 3.1, 26, 26 - billed_theirs, 26, billed_theirs, 0, [0.26] * 26)],
        }
    return Results(
        plan=QUICK,
        quick=True,
        startup=Startup(server=[0.9] * 3, floor=[1.0] * 3, floor_import=[0.8] * 3),
        sizes=sizes,
        calls=Calls(miss=[0.004] * 5, hit=[0.0015] * 5),
        memory=PipelineResult(1000, 1.2, 0, 76_000, 78_000, 77_000),
        bursts=[_burst("a", 150, 0.5), _burst("c1", 10, 0.46), _burst("c2", 10, 0.04)],
        session=session,
        elapsed=60.0,
    )


def test_the_document_has_machine_session_basics_bursts_and_command_in_order() -> None:
    document = render_document(_results(), MACHINE, "uv run --extra dev python -m bench --quick")
    order = [
        "# Benchmarks",
        "**Quick run**",
        "- Date: 2026-01-01 00:00 UTC; load average before the run 0.50 / 0.25 / 0.12",
        "## Agent session",
        "26 web searches in 12 rounds",
        "### At a 20/s plan",
        "| wall time of the session | 2.20 s | 3.10 s | 0.71× | ≤ 1.00× | met |",
        "### At a 1/s plan",
        "| failed calls | 0 | 23 | — | 0 (ours, every run) | met |",
        "## Start-up, context size",
        "## Bursts at the plan's rate",
        "## Command",
        "uv run --extra dev python -m bench --quick",
    ]
    positions = [document.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "| ours | official 2.1.4 |" in document


def test_start_up_sizes_and_memory_are_judged_against_their_targets() -> None:
    rows = {row[0].split(":")[0].split(" (")[0]: row for row in basics_rows(_results())}
    assert rows["Start-up"][1] == "0.90 s (0.90× floor; 1.12× import only)" and rows["Start-up"][-1] == MET
    assert rows["`tools/list`"][1:] == ["11,000 B", "deterministic", "< 13,000 B", MET]
    assert rows["Text the model reads per result"][1] == "265 B ≈ 66 tokens (4 B each)"
    assert rows["Peak RSS"][1] == "79.9 MB" and rows["Peak RSS"][-1] == MET  # 78,000 kB of /proc = 79.9 MB
    slow = Startup(server=[1.1] * 3, floor=[1.0] * 3, floor_import=[0.8] * 3)
    assert basics_rows(Results(plan=QUICK, quick=True, startup=slow))[2][-1] == MISSED
    assert memory_row(PipelineResult(1000, 1.0, 0, 76_000, 79_000, 77_000))[-1] == MISSED  # 80.9 MB


def test_a_burst_misses_when_any_run_failed_a_call_was_refused_or_a_fresh_process_was_slow() -> None:
    rows = burst_rows([_burst("a", 150, 0.5), _burst("a", 150, 0.6, ok=149), _burst("c1", 10, 0.51)])
    assert rows[0][1] == "149.5/150 ok, 0.5 RATE_LIMITED, 0 × 429, wall 0.55 s (0.50 s–0.60 s)"
    assert rows[0][-1] == MISSED
    assert rows[1][2] == "all ok, 0 × 429, wall ≤ 0.50 s in every run" and rows[1][-1] == MISSED
    assert burst_rows([_burst("b", 200, 10.4, limited=1)])[0][-1] == MISSED
    assert burst_rows([_burst("b", 200, 10.4)])[0][-1] == MET


def test_one_table_helper_escapes_every_cell_and_no_bench_module_writes_a_table_by_hand() -> None:
    assert table(("a", "b|c"), [("x\ny", 1)]) == "| a | b\\|c |\n|---|---|\n| x y | 1 |\n"
    bench = Path(__file__).resolve().parents[2] / "bench"
    by_hand = [p.name for p in bench.glob("*.py") if p.name != "tables.py" and "|---" in p.read_text(encoding="utf-8")]
    assert by_hand == []


def test_the_second_rendered_read_is_judged_against_three_seconds_and_a_machine_without_a_browser_says_so() -> None:
    fast = RenderResult([0.3], [4.0], [1.4], [1.3], browser="/usr/bin/chromium")
    section = render_render(fast, 1, MACHINE, "python -m bench --only render")
    assert section.startswith(RENDER_HEADING)
    assert "| second app shell | 1.40 s | 1.40 s–1.40 s | < 3 s | met |" in section
    assert "| first app shell (the browser starts) | 4.00 s | 4.00 s–4.00 s | — | — |" in section
    slow = RenderResult([0.3], [6.0], [3.2], [3.1], browser="/usr/bin/chromium")
    assert "| < 3 s | missed |" in render_render(slow, 1, MACHINE, "x")
    none = RenderResult([0.3], [0.4], [0.4], [0.4], rendered=False, note="no browser can render it here")
    assert (
        render_render(none, 1, MACHINE, "x")
        .rstrip()
        .endswith("Not rendered on this machine: no browser can render it here")
    )
