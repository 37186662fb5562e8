"""The bench's pure parts — statistics, parsing, target verdicts, table and report — so the figures it prints are right.

No timing is asserted here: the bench measures, CI runs it in quick mode, and nothing judges speed in tests.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
from bench.hotspots import BUILTINS_FILE, HitProfile, HotSpot, code_label, hot_spots
from bench.machine import Machine, cpu_model, mem_total_bytes, physical_cores
from bench.measure import (
    QUICK_PLAN,
    BurstRun,
    ImportProfile,
    LatencyResult,
    MemoryResult,
    Results,
    StartupResult,
    TextResult,
    ToolsListResult,
    find_markup,
    import_profile,
    parse_call_log,
    parse_importtime,
    source_ages,
    text_of,
)
from bench.report import (
    MET,
    MISSED,
    NO_TARGET,
    Row,
    build_rows,
    fmt_ms,
    judge_bursts,
    judge_hit,
    judge_miss,
    judge_startup,
    judge_text,
    judge_tools_list,
    miss_breakdown,
    missed_causes,
    render_document,
    render_table,
    status_word,
)
from bench.rpc import BenchError, read_vm_status
from bench.stats import paired_differences, summarize
from bench.upstream import DIRECT_KEY, DirectClient, RecordedPageBrave, page_slice
from testkit.brave.brave import VALID_KEY, WEB_PATH
from testkit.stdio import RpcError, result_of, server_env

MS = 0.001

# ------------------------------------------------------------------------------------------------ statistics


def test_summary_of_known_sample() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median, s.minimum, s.maximum) == (5, 3.0, 1.0, 5.0)
    assert (s.q1, s.q3, s.iqr) == (2.0, 4.0, 2.0)
    assert s.p10 == pytest.approx(1.4)
    assert s.p90 == pytest.approx(4.6)


def test_summary_of_even_sample_interpolates_the_median() -> None:
    s = summarize([1.0, 2.0, 3.0, 10.0])
    assert s.median == 2.5
    assert s.minimum == 1.0 and s.maximum == 10.0
    assert s.q1 <= s.median <= s.q3


def test_summary_of_one_sample_is_its_own_spread() -> None:
    s = summarize([0.25])
    assert (s.n, s.median, s.p10, s.p90, s.q1, s.q3, s.iqr) == (1, 0.25, 0.25, 0.25, 0.25, 0.25, 0.0)


def test_summary_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        summarize([])


def test_scaled_summary_changes_every_figure() -> None:
    s = summarize([0.001, 0.002, 0.003]).scaled(1000)
    assert (s.minimum, s.median, s.maximum) == pytest.approx((1.0, 2.0, 3.0))


def test_paired_differences() -> None:
    assert paired_differences([3.0, 5.0], [1.0, 1.5]) == [2.0, 3.5]
    with pytest.raises(ValueError, match="differ in length"):
        paired_differences([1.0], [1.0, 2.0])


# ------------------------------------------------------------------------------------------------ verdicts


def test_startup_target_is_inclusive_at_one_point_three() -> None:
    assert judge_startup(1.05, 1.0)
    assert not judge_startup(1.06, 1.0)
    with pytest.raises(ValueError, match="positive"):
        judge_startup(1.0, 0.0)


def test_tools_list_must_be_under_fifteen_thousand_bytes() -> None:
    assert judge_tools_list(14_999)
    assert not judge_tools_list(15_000)


def test_miss_overhead_and_hit_time_limits() -> None:
    assert judge_miss(4.0 * MS, 1.0 * MS)
    assert not judge_miss(4.1 * MS, 1.0 * MS)
    assert judge_hit(0.9 * MS)
    assert not judge_hit(1.0 * MS)


def _text(**overrides: Any) -> TextResult:
    values: dict[str, Any] = {
        "source": "recorded",
        "text_bytes": 2960,
        "structured_bytes": 4000,
        "results": 10,
        "ages_expected": 9,
        "ages_shown": 9,
        "markup": [],
        "text": "",
    }
    values.update(overrides)
    return TextResult(**values)


def test_text_target_needs_size_ages_and_clean_snippets() -> None:
    assert judge_text(_text())
    assert not judge_text(_text(text_bytes=2970))
    assert not judge_text(_text(ages_shown=8))
    assert not judge_text(_text(markup=["&quot;"]))
    assert not judge_text(_text(results=0))


def _burst(ok: int = 10, limited: int = 0, wall: float = 9.3) -> BurstRun:
    return BurstRun(calls=10, ok=ok, rate_limited=limited, upstream_requests=10, wall=wall)


def test_burst_target_holds_only_if_every_run_holds() -> None:
    assert judge_bursts([_burst(), _burst(wall=9.9)], 9.9, strict=False)
    assert not judge_bursts([_burst(), _burst(wall=9.91)], 9.9, strict=False)
    assert not judge_bursts([_burst(ok=9)], 9.9, strict=False)
    assert not judge_bursts([_burst(limited=1)], 9.9, strict=False)
    assert not judge_bursts([_burst(wall=1.0)], 1.0, strict=True)
    assert judge_bursts([_burst(wall=0.99)], 1.0, strict=True)
    assert not judge_bursts([], 1.0, strict=True)


def test_status_words() -> None:
    assert (status_word(True), status_word(False), status_word(None)) == (MET, MISSED, NO_TARGET)


# ------------------------------------------------------------------------------------------------ rendering


def test_table_escapes_pipes_and_keeps_one_line_per_row() -> None:
    table = render_table([Row("a|b", "1\n2", "s", "t", MET)])
    lines = table.strip().split("\n")
    assert len(lines) == 3
    assert lines[0] == "| Measurement | Result (median) | Spread | Target | Status |"
    assert "a\\|b" in lines[2] and "1 2" in lines[2]
    assert lines[2].endswith("| met |")


def test_fmt_ms_precision() -> None:
    assert fmt_ms(0.00123) == "1.23 ms"
    assert fmt_ms(0.0456) == "45.6 ms"
    assert fmt_ms(0.456) == "456 ms"


def _results(*, hit_ms: float = 0.5, miss_ms: float = 3.0, upstream_ms: float = 1.0) -> Results:
    n = 5
    return Results(
        plan=QUICK_PLAN,
        quick=True,
        startup=StartupResult(server=[1.0] * 3, floor=[0.96] * 3, floor_import=[0.8] * 3),
        tools_list=ToolsListResult(total_bytes=4900, per_tool={"brave_web_search": 2600, "brave_summarizer": 2300}),
        text=_text(),
        latency=LatencyResult(
            miss_rtt=[miss_ms * MS] * n,
            hit_rtt=[(hit_ms + 1.0) * MS] * n,
            upstream=[upstream_ms * MS] * n,
            miss_inside=[(miss_ms - 1.0) * MS] * n,
            hit_inside=[hit_ms * MS] * n,
        ),
        slow_bursts=[_burst()],
        fast_bursts=[_burst(wall=0.05)],
        memory=MemoryResult(calls=200, hits=100, misses=100, hwm_after_init_kb=70_000, hwm_kb=76_800, rss_kb=76_000),
        profile=ImportProfile(
            runs=1, floor_total_ms=900, server_total_ms=1000, extra_total_ms=100, top_extra=[("x.y", 20.0)]
        ),
        hit_profile=HitProfile(
            calls=5,
            per_call_ms=0.6,
            spots=[HotSpot("brave_search_mcp/formatting.py:clean_text", 0.4, 200.0)],
            by_file=[HotSpot("brave_search_mcp/formatting.py", 0.6, 300.0)],
        ),
        elapsed=12.0,
    )


def test_rows_carry_each_target_and_verdict() -> None:
    rows = {row.measurement.split(":")[0].split(" (")[0]: row for row in build_rows(_results())}
    statuses = [row.status for row in build_rows(_results())]
    assert statuses.count(MISSED) == 0
    assert rows["Start-up"].result.startswith("1.000 s (1.04× floor; 1.25× import-only floor)")
    assert rows["Start-up"].status == MET
    assert rows["`tools/list` size"].result == "4,900 B"
    assert rows["Text the model reads, 10-result web search"].result == "2,960 B = 296 B/result"
    assert rows["Cache miss"].result == "3.00 ms (+2.00 ms over upstream)"
    assert rows["Peak RSS"].result == "75.0 MiB"
    assert rows["Peak RSS"].status == NO_TARGET


def test_missed_targets_say_missed_and_explain_the_cause() -> None:
    results = _results(hit_ms=1.5, miss_ms=6.0, upstream_ms=1.0)
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
    document = render_document(_results(), _machine(), "python -m bench")
    assert missed_causes(_results()) == []
    assert "targets: measured causes" not in document


def _machine() -> Machine:
    return Machine(
        date="2026-01-01 00:00 UTC",
        cpu_model="Test CPU",
        logical_cpus=4,
        physical_cores=2,
        ram_bytes=8 * 1024**3,
        os="Linux",
        python="CPython 3.11.7",
        packages={"mcp": "2.3.0"},
    )


def test_document_has_machine_table_method_and_command_in_order() -> None:
    machine = dataclasses.replace(_machine(), load_average=(0.5, 0.25, 0.125))
    document = render_document(_results(hit_ms=2.0), machine, "uv run --extra dev python -m bench")
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


# ------------------------------------------------------------------------------------------------ parsing


def test_call_log_lines_are_found_by_trace_id() -> None:
    lines = [
        "import time: noise",
        json.dumps({"msg": "tool call", "trace_id": "a1", "duration_ms": 0.4, "cache_hit": True, "attempts": 0}),
        json.dumps({"msg": "something else", "trace_id": "zz", "duration_ms": 9}),
        "{not json",
        json.dumps({"msg": "tool call", "trace_id": "b2", "duration_ms": 3.2, "cache_hit": False, "attempts": 1}),
    ]
    calls = parse_call_log("\n".join(lines))
    assert set(calls) == {"a1", "b2"}
    assert calls["a1"].duration_ms == 0.4 and calls["a1"].cache_hit is True
    assert calls["b2"].attempts == 1


def test_importtime_parsing_and_the_extra_modules() -> None:
    floor = "import time: self [us] | cumulative | imported package\nimport time:       100 |        100 | json\n"
    server = floor + "import time:      2500 |       3000 |   brave_search_mcp.models\nimport time: 7 | 7 | tiny\n"
    assert parse_importtime(floor) == {"json": 100}
    profile = import_profile([parse_importtime(floor)], [parse_importtime(server)])
    assert profile.top_extra == [("brave_search_mcp.models", 2.5), ("tiny", 0.01)]
    assert profile.extra_total_ms == pytest.approx(2.507)
    assert profile.floor_total_ms == pytest.approx(0.1)
    with pytest.raises(ValueError, match="same"):
        import_profile([], [])


def test_markup_finder_sees_tags_and_entities_but_not_plain_text() -> None:
    assert find_markup("Vec<T> is fine, so is a & b and x < y > z") == []
    assert find_markup("a <strong>b</strong> &quot;c&#x27; &#39;") == [
        "<strong>",
        "</strong>",
        "&quot;",
        "&#x27;",
        "&#39;",
    ]


def test_source_ages_prefer_age_then_page_age() -> None:
    results = [{"age": "2 days ago", "page_age": "2024"}, {"page_age": "2023-01-01"}, {"age": " "}, {}]
    assert source_ages(results) == ["2 days ago", "2023-01-01"]


def test_text_of_joins_only_text_content() -> None:
    result = {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": "b"}]}
    assert text_of(result) == "ab"


def test_vm_status_lines() -> None:
    status = "Name:\tpython\nVmPeak:\t  300 kB\nVmHWM:\t   79000 kB\nVmRSS:\t 78000 kB\nThreads: 3\n"
    assert read_vm_status(status) == {"VmPeak": 300, "VmHWM": 79000, "VmRSS": 78000}


def test_jsonrpc_error_is_an_rpc_error() -> None:
    assert result_of({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}) == {"ok": True}
    with pytest.raises(RpcError, match="JSON-RPC error"):
        result_of({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}})


@pytest.mark.parametrize("for_tests", [True, False])
def test_server_env_is_minimal_and_points_at_the_fake(for_tests: bool) -> None:
    env = server_env("http://127.0.0.1:1234", for_tests=for_tests, BRAVE_SEARCH_RETRIES="0")
    assert env["BRAVE_SEARCH_BASE_URL"] == "http://127.0.0.1:1234"
    assert env["BRAVE_SEARCH_API_KEY"] == VALID_KEY
    assert env["BRAVE_SEARCH_RETRIES"] == "0"
    assert not [name for name in env if name not in ("PATH", "HOME") and not name.startswith("BRAVE_SEARCH_")]
    assert ("BRAVE_SEARCH_STATE" in env) is for_tests  # the bench measures the shipped defaults


CPUINFO = """processor\t: 0
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 0

processor\t: 1
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 0

processor\t: 2
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 1
"""


def test_machine_facts_from_proc_text() -> None:
    assert cpu_model(CPUINFO) == "Example CPU @ 3.00GHz"
    assert cpu_model("processor : 0\n") == "unknown"
    assert physical_cores(CPUINFO) == 2
    assert physical_cores("processor : 0\n") is None
    assert mem_total_bytes("MemTotal:       2048 kB\nMemFree: 1 kB\n") == 2048 * 1024
    assert mem_total_bytes("") is None


def test_hot_spots_sum_own_time_per_function_and_file() -> None:
    entries = [
        ("f.py", "f.py:a", 0.3),
        ("f.py", "f.py:b", 0.1),
        ("f.py", "f.py:a", 0.1),
        (BUILTINS_FILE, "<method 'join' of 'str' objects>", 0.5),
    ]
    functions, files = hot_spots(entries, calls=10, top=2)
    assert [(s.label, round(s.share, 2)) for s in functions] == [
        ("<method 'join' of 'str' objects>", 0.5),
        ("f.py:a", 0.4),
    ]
    assert files[0].label == BUILTINS_FILE and files[1].label == "f.py"
    assert files[1].own_us_per_call == pytest.approx(50_000)
    assert hot_spots([], calls=1) == ([], [])
    with pytest.raises(ValueError, match="positive"):
        hot_spots(entries, calls=0)


def test_code_labels_name_anonymous_code_by_line() -> None:
    file, label = code_label((lambda: None).__code__)
    assert file.endswith("test_bench.py")
    assert label.startswith(file + ":<lambda> (line ")
    assert code_label("<built-in method len>") == (BUILTINS_FILE, "<built-in method len>")


# ------------------------------------------------------------------------------------------------ upstream

PAGE: dict[str, Any] = {
    "type": "search",
    "query": {"original": "recorded", "more_results_available": True},
    "mixed": {"type": "mixed"},
    "videos": {"type": "videos", "results": [{"title": "v"}]},
    "web": {
        "type": "search",
        "results": [
            {"title": f"r{i}", "url": f"https://e.example/{i}", "description": "<strong>x</strong> &quot;y&quot;"}
            for i in range(5)
        ]
        + [{"title": "with extra", "url": "https://e.example/x", "extra_snippets": ["s"]}],
    },
}


def test_page_slice_returns_the_requested_page_and_sections_only() -> None:
    body = page_slice(PAGE, {"q": "hello", "count": "2", "offset": "1", "result_filter": "web"})
    assert set(body) == {"type", "query", "web"}
    assert [r["title"] for r in body["web"]["results"]] == ["r2", "r3"]
    assert body["query"]["original"] == "hello"
    assert body["query"]["more_results_available"] is True


def test_page_slice_follows_decorations_and_extra_snippets_like_brave() -> None:
    plain = page_slice(PAGE, {"q": "q", "count": "20", "text_decorations": "false"})
    assert "mixed" in plain and "videos" in plain
    assert plain["web"]["results"][0]["description"] == "x &quot;y&quot;"
    assert "extra_snippets" not in plain["web"]["results"][-1]
    assert plain["query"]["more_results_available"] is False
    rich = page_slice(PAGE, {"q": "q", "count": "20", "extra_snippets": "true"})
    assert rich["web"]["results"][0]["description"].startswith("<strong>")
    assert rich["web"]["results"][-1]["extra_snippets"] == ["s"]
    assert PAGE["web"]["results"][0]["description"].startswith("<strong>"), "the recorded page is never mutated"


def test_recorded_page_fake_keeps_the_fakes_checks() -> None:
    fake = RecordedPageBrave(PAGE, api_keys=(VALID_KEY,), rate_per_second=1, monthly_limit=0)
    headers = {"x-subscription-token": VALID_KEY}
    ok = fake.handle("GET", WEB_PATH, [("q", "hello"), ("count", "3")], headers)
    assert ok.status == 200
    assert [r["title"] for r in ok.json()["web"]["results"]] == ["r0", "r1", "r2"]
    assert fake.handle("GET", WEB_PATH, [("q", "again")], headers).status == 429
    assert fake.rate_limited_count == 1
    bad_key = fake.handle("GET", WEB_PATH, [("q", "x")], {"x-subscription-token": "wrong-key-not-real"})
    assert bad_key.status == 422


def test_direct_client_only_goes_to_the_local_fake() -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        DirectClient("https://api.search.brave.com")
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        DirectClient("http://localhost:8080")
    assert DIRECT_KEY != VALID_KEY


# ------------------------------------------------------------------------------------------------ the command


@pytest.fixture
def quiet_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() configures process logging; keep the test process as it was."""
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)


async def _fake_run(plan: Any, *, quick: bool) -> Results:
    return _results(hit_ms=2.0)


async def _broken_run(plan: Any, *, quick: bool) -> Results:
    raise BenchError("server closed stdout")


def test_main_prints_the_table_writes_the_document_and_exits_zero_even_if_a_target_is_missed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    monkeypatch.setattr(bench_main, "run_all", _fake_run)
    out = io.StringIO()
    target = tmp_path / "docs" / "benchmarks.md"
    # the speed side (real servers, ~20 s) has its own tests in test_bench_speed.py
    assert bench_main.main(["--quick", "--no-speed", "--output", str(target)], out=out) == 0
    printed = out.getvalue()
    assert "| Cache hit: inside the server" in printed and "| missed |" in printed
    assert target.read_text(encoding="utf-8").startswith("# Benchmarks")


def test_main_with_no_write_leaves_the_document_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    monkeypatch.setattr(bench_main, "run_all", _fake_run)
    target = tmp_path / "benchmarks.md"
    assert bench_main.main(["--quick", "--no-speed", "--no-write", "--output", str(target)], out=io.StringIO()) == 0
    assert not target.exists()


def test_main_exits_one_when_the_bench_itself_breaks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(bench_main, "run_all", _broken_run)
    out = io.StringIO()
    target = tmp_path / "benchmarks.md"
    with caplog.at_level(logging.ERROR, logger="bench"):
        assert bench_main.main(["--output", str(target)], out=out) == 1
    assert "server closed stdout" in caplog.text
    assert out.getvalue() == ""
    assert not target.exists()


def test_command_line_names_uv_when_run_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    assert bench_main.command_line([]) == "uv run --extra dev python -m bench"
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH")
    assert bench_main.command_line(["--quick"]) == "python -m bench --quick"


def test_a_target_met_by_a_hair_is_still_explained() -> None:
    marginal = _results(miss_ms=3.9, upstream_ms=1.0)  # +2.9 ms: met, but within run-to-run noise of 3 ms
    causes = missed_causes(marginal)
    assert len(causes) == 1
    assert "(met by less than 0.30 ms)" in causes[0]
    assert "### Missed or marginal targets" in render_document(marginal, _machine(), "python -m bench")
    assert missed_causes(_results(miss_ms=3.5, upstream_ms=1.0)) == []  # +2.5 ms: comfortably met
