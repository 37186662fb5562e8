"""The results table and docs/benchmarks.md: rows beside their targets, the causes of a miss, the order of parts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.report import build_rows, miss_breakdown, missed_causes, render_document
from bench.tables import fmt_ms, table
from bench.targets import MET, MISSED, NO_TARGET, Row, render_table
from tests.bench.figures import MS, a_machine, bench_results

# ------------------------------------------------------------------------------------------------ rendering


def test_table_escapes_pipes_and_keeps_one_line_per_row() -> None:
    table = render_table([Row("a|b", "1\n2", "s", "t", MET)])
    lines = table.strip().split("\n")
    assert len(lines) == 3
    assert lines[0] == "| Measurement | Result (median) | Spread | Target | Status |"
    assert "a\\|b" in lines[2] and "1 2" in lines[2]
    assert lines[2].endswith("| met |")


def test_one_table_helper_escapes_every_cell_and_rules_the_header() -> None:
    assert table(("a", "b|c"), [("x\ny", 1), ("", "**z**")]) == "| a | b\\|c |\n|---|---|\n| x y | 1 |\n|  | **z** |\n"


def test_no_bench_module_writes_a_markdown_table_by_hand() -> None:
    bench = Path(__file__).resolve().parents[2] / "bench"
    by_hand = [p.name for p in bench.glob("*.py") if p.name != "tables.py" and "|---" in p.read_text(encoding="utf-8")]
    assert by_hand == []


def test_fmt_ms_precision() -> None:
    assert fmt_ms(0.00123) == "1.23 ms"
    assert fmt_ms(0.0456) == "45.6 ms"
    assert fmt_ms(0.456) == "456 ms"


def test_rows_carry_each_target_and_verdict() -> None:
    rows = {row.measurement.split(":")[0].split(" (")[0]: row for row in build_rows(bench_results())}
    statuses = [row.status for row in build_rows(bench_results())]
    assert statuses.count(MISSED) == 0
    assert rows["Start-up"].result.startswith("1.000 s (1.04× floor; 1.25× import-only floor)")
    assert rows["Start-up"].status == MET
    assert rows["`tools/list` size"].result == "4,900 B"
    assert rows["Text the model reads, 10-result web search"].result == "2,960 B = 296 B/result"
    assert rows["Cache miss"].result == "3.00 ms (+2.00 ms over upstream)"
    assert rows["Peak RSS"].result == "75.0 MiB"
    assert rows["Peak RSS"].status == NO_TARGET


def test_missed_targets_say_missed_and_explain_the_cause() -> None:
    results = bench_results(hit_ms=1.5, miss_ms=6.0, upstream_ms=1.0)
    by_name = {row.measurement: row.status for row in build_rows(results)}
    assert by_name["Cache miss: `tools/call` round trip over stdio"] == MISSED
    assert by_name["Cache hit: inside the server (`duration_ms` of its log line)"] == MISSED
    causes = missed_causes(results)
    assert len(causes) == 2
    miss_cause, hit_cause = causes
    assert "adds 5.00 ms" in miss_cause and "1.00 ms is stdio" in miss_cause
    assert "`brave_search_mcp/formatting.py` 60%" in hit_cause
    parts = miss_breakdown(results)
    assert parts["framing"] + parts["shaping"] + parts["http"] + 1.0 * MS == pytest.approx(6.0 * MS)


def test_all_targets_met_means_no_cause_section() -> None:
    document = render_document(bench_results(), a_machine(), "python -m bench")
    assert missed_causes(bench_results()) == []
    assert "targets: measured causes" not in document


def test_document_has_machine_table_method_and_command_in_order() -> None:
    machine = dataclasses.replace(a_machine(), load_average=(0.5, 0.25, 0.125))
    document = render_document(bench_results(hit_ms=2.0), machine, "uv run --extra dev python -m bench")
    assert "load average before the run 0.50 / 0.25 / 0.12" in document
    order = [
        "# Benchmarks",
        "**Quick run**",
        "Test CPU, 4 logical CPUs (2 physical cores); RAM 8.0 GiB",
        "| Measurement |",
        "### Missed or marginal targets",
        "## Method",
        "raw line-delimited JSON-RPC",
        "## Start-up profile",
        "## Cache-hit profile",
        "## Command",
        "uv run --extra dev python -m bench",
    ]
    positions = [document.index(marker) for marker in order]
    assert positions == sorted(positions)


def test_a_target_met_by_a_hair_is_still_explained() -> None:
    marginal = bench_results(miss_ms=3.9, upstream_ms=1.0)  # +2.9 ms: met, but within run-to-run noise of 3 ms
    causes = missed_causes(marginal)
    assert len(causes) == 1
    assert "(met by less than 0.30 ms)" in causes[0]
    assert "### Missed or marginal targets" in render_document(marginal, a_machine(), "python -m bench")
    assert missed_causes(bench_results(miss_ms=3.5, upstream_ms=1.0)) == []  # +2.5 ms: comfortably met
