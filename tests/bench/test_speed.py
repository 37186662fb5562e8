"""The speed part of the bench: official-server install and redirect, verdicts, parsers and the rendered report.

No timing is asserted: the figures here are constructed, and the node test checks only where a request goes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.callprofile import STAGES, rank, stage_times
from bench.imports import ImportLine, parse_import_lines, summarize_imports, top_modules
from bench.micro import (
    END,
    REFERENCE,
    START,
    Timing,
    baseline_document,
    load_baseline,
    machine_scale,
    render_micro,
    verdict,
)
from bench.official import (
    PRELOAD,
    OfficialServer,
    cache_root,
    ensure_official,
    entry_point,
    install_dir,
    installed_version,
    official_env,
)
from bench.overhead import floor_contenders
from bench.pipeline import PipelineResult, check_replies
from bench.rpc import BenchError
from bench.serverprofile import ServerProfile, by_package, package_of
from bench.sidebyside import OURS, ServerFigures, SideBySide, contenders, parallel_wall, started
from bench.speed import QUICK_SKIP, SpeedResults
from bench.speed_report import (
    judge_pipeline,
    pipeline_rows,
    render_server_profiles,
    render_speed,
    side_rows,
    speed_causes,
)
from bench.stats import summarize
from bench.tables import replace_section, spread, write_section
from testkit.brave import VALID_KEY, WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import Timed

# ------------------------------------------------------------------------------------------ official install


def test_cache_root_prefers_xdg_then_home() -> None:
    assert cache_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/brave-search-mcp-bench")
    assert cache_root({"HOME": "/h"}) == Path("/h/.cache/brave-search-mcp-bench")


def _fake_install(prefix: Path, version: str) -> None:
    package = entry_point(prefix).parent.parent
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"version": version}), encoding="utf-8")


def test_installed_version_reads_the_package_and_tolerates_garbage(tmp_path: Path) -> None:
    assert installed_version(tmp_path) is None
    _fake_install(tmp_path, "2.1.4")
    assert installed_version(tmp_path) == "2.1.4"
    (entry_point(tmp_path).parent.parent / "package.json").write_text("not json", encoding="utf-8")
    assert installed_version(tmp_path) is None


def _tools(directory: Path, npm_body: str) -> None:
    directory.mkdir()
    for name, body in (("node", "exit 0"), ("npm", npm_body)):
        script = directory / name
        script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        script.chmod(0o755)


def test_skips_with_one_line_without_node_or_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither tool there
    assert ensure_official(tmp_path / "cache") == "official server skipped: node/npm not found on PATH"


def test_skips_when_npm_install_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path / "bin", "echo 'npm ERR! network unreachable' >&2; exit 1")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    outcome = ensure_official(tmp_path / "cache")
    assert outcome == "official server skipped: npm install exited 1 (npm ERR! network unreachable)"


def test_reuses_an_installed_version_without_running_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path / "bin", "exit 1")  # would fail if called
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    _fake_install(install_dir(tmp_path / "cache"), "2.1.4")
    outcome = ensure_official(tmp_path / "cache")
    assert isinstance(outcome, OfficialServer)
    assert outcome.command()[1:3] == ["--import", PRELOAD.as_uri()]
    assert outcome.command()[-2:] == ["--transport", "stdio"]


def test_official_env_points_only_at_loopback() -> None:
    env = official_env("http://127.0.0.1:4321/", "bench-key-not-real", path="/bin")
    assert env["BENCH_BRAVE_ORIGIN"] == "http://127.0.0.1:4321"
    assert env["BRAVE_API_KEY"] == "bench-key-not-real"
    for bad in ("https://api.search.brave.com", "http://10.0.0.1:80", "http://127.0.0.1"):
        with pytest.raises(ValueError, match="local fake"):
            official_env(bad, "k")


# ------------------------------------------------------------------------------------------ the node preload

NODE = shutil.which("node")
FETCH_SCRIPT = """
const headers = {'X-Subscription-Token': process.argv[2], Accept: 'application/json'};
const r = await fetch(process.argv[1], {headers});
process.stdout.write(String(r.status));
"""


def _node_fetch(url: str, origin: str) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    return subprocess.run(
        [NODE, "--import", PRELOAD.as_uri(), "--input-type=module", "-e", FETCH_SCRIPT, url, VALID_KEY],
        env={"PATH": "/usr/bin:/bin", "BENCH_BRAVE_ORIGIN": origin},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(NODE is None, reason="node not installed")
def test_preload_sends_brave_requests_to_the_fake() -> None:
    with FakeBraveServer() as upstream:
        origin = upstream.base_url.rstrip("/")
        done = _node_fetch(f"https://api.search.brave.com{WEB_PATH}?q=hello", origin)
        assert (done.returncode, done.stdout) == (0, "200"), done.stderr
        assert upstream.fake.hits(WEB_PATH) == 1
        assert upstream.fake.requests[-1].params == [("q", "hello")]


@pytest.mark.skipif(NODE is None, reason="node not installed")
def test_preload_refuses_other_origins_and_a_non_loopback_target() -> None:
    with FakeBraveServer() as upstream:
        done = _node_fetch("https://example.com/", upstream.base_url.rstrip("/"))
        assert done.returncode != 0
        assert "refusing a request outside the bench" in done.stderr
        assert upstream.fake.requests == []
    done = _node_fetch("https://api.search.brave.com/x", "https://api.search.brave.com")
    assert done.returncode == 2
    assert "must be http://127.0.0.1:PORT" in done.stderr


# ------------------------------------------------------------------------------------------ micro-benchmarks


def test_verdict_flags_twenty_percent_either_way() -> None:
    assert verdict(121.0, 100.0) == "SLOWER (+21%)"
    assert verdict(119.0, 100.0) == "ok"
    assert verdict(79.0, 100.0) == "faster (-21%)"
    assert verdict(5.0, None) == "no baseline"


def test_verdict_divides_out_a_slower_machine() -> None:
    parse = Timing("parse", "p", 220.0, 220.0, 1, reference_us=200.0)
    baseline = {REFERENCE: 100.0, "parse": 100.0}
    assert machine_scale(parse, baseline) == 2.0
    assert verdict(220.0, 100.0, scale=2.0) == "ok"  # 2.2x slower on a 2x slower machine: not a regression
    assert verdict(300.0, 100.0, scale=2.0) == "SLOWER (+50%)"
    assert machine_scale(parse, {"parse": 100.0}) == 1.0  # no stored reference: raw comparison
    table = render_micro([Timing(REFERENCE, "r", 200.0, 200.0, 0), parse], baseline)
    assert "| 100.0 | 2.00 | calibration |" in table
    assert "| `parse`: p | 220.0 | 220.0 | 100.0 | 2.00 | ok |" in table


def test_baseline_round_trip_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    assert load_baseline(path) == {}
    path.write_text(baseline_document([Timing("parse", "p", 400.0, 410.0, 100)], "here"), encoding="utf-8")
    assert load_baseline(path) == {"parse": 400.0}


def test_micro_table_shows_a_regression() -> None:
    table = render_micro([Timing("parse", "parse it", 500.0, 510.0, 10)], {"parse": 400.0})
    assert "| `parse`: parse it | 500.0 | 510.0 | 400.0 | 1.00 | SLOWER (+25%) |" in table


def test_replace_section_replaces_only_the_marked_part_or_appends() -> None:
    section = f"{START}\nnew\n{END}\n"
    document = f"# B\n\n{START}\nold\n{END}\n\n## Command\n"
    assert replace_section(document, section, START, END) == f"# B\n\n{section}\n## Command\n"
    assert replace_section("# B\n", section, START, END) == f"# B\n\n{section}"


def test_write_section_starts_a_missing_document_and_replaces_its_own_part(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    write_section(f"{START}\nold\n{END}\n", START, END, doc)
    assert doc.read_text(encoding="utf-8") == f"# Benchmarks\n\n{START}\nold\n{END}\n"
    write_section(f"{START}\nnew\n{END}\n", START, END, doc)
    assert doc.read_text(encoding="utf-8") == f"# Benchmarks\n\n{START}\nnew\n{END}\n"


def test_a_spread_without_the_iqr_keeps_the_deciles_and_the_count() -> None:
    stats = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert spread(stats, str) == "IQR 2.0 – 4.0; p10–p90 1.4 – 4.6; n=5"
    assert spread(stats, str, iqr=False) == "p10–p90 1.4 – 4.6; n=5"


# ------------------------------------------------------------------------------------------ profile and imports


def test_rank_sums_own_time_per_function_and_orders_it() -> None:
    entries = [
        ("a.py", "a.py:f", 0.002, 0.005, 10),
        ("a.py", "a.py:f", 0.001, 0.003, 5),
        ("b.py", "b.py:g", 0.002, 0.004, 1),
    ]
    rows = rank(entries, calls=1000)
    assert [row.label for row in rows] == ["a.py:f", "b.py:g"]
    assert rows[0].own_us == pytest.approx(3.0)
    assert rows[0].cumulative_us == pytest.approx(5.0)
    assert rows[0].calls_per_call == pytest.approx(0.015)
    with pytest.raises(ValueError):
        rank(entries, calls=0)


def test_stage_times_name_each_stage_and_zero_when_absent() -> None:
    entries = [("brave_search_mcp/brave/results.py", "brave_search_mcp/brave/results.py:parse_answer", 0.1, 0.5, 1000)]
    stages = dict(stage_times(entries, calls=1000))
    assert stages["parse (parse_answer)"] == pytest.approx(500.0)
    assert set(stages) == {stage for stage, _, _ in STAGES}
    assert stages["render (fit_to_limits)"] == 0.0


IMPORTTIME = """import time: self [us] | cumulative | imported package
import time:       100 |        100 |   encodings
import time:      3000 |       9000 |     mcp_types._types
import time:      2000 |       2000 |     mcp_types._v2025_11_25
import time:       500 |      11500 |   mcp_types
import time:        50 |      12000 | mcp
import time:       700 |        700 | brave_search_mcp.render
"""


def test_parse_import_lines_keeps_depth_and_skips_the_header() -> None:
    lines = parse_import_lines(IMPORTTIME + "not an import line\n")
    assert lines[0] == ImportLine("encodings", 100, 100, 1)
    assert lines[1] == ImportLine("mcp_types._types", 3000, 9000, 2)
    assert len(lines) == 6


def test_top_modules_skips_submodules_of_listed_ones() -> None:
    top = top_modules({"mcp": 12.0, "mcp.x": 11.0, "mcpx": 5.0, "encodings": 20.0}, floor={"mcp"})
    assert top == [("mcp", 12.0, True), ("mcpx", 5.0, False)]


def test_summarize_imports_measures_mcp_types() -> None:
    run = parse_import_lines(IMPORTTIME)
    result = summarize_imports([run], [run[:3]], ([0.1], [0.5], [0.9]))
    assert result.types_self_ms == pytest.approx(5.5)
    assert result.types_by_module[0] == ("mcp_types._types", 3.0)
    assert result.ours_top == [("brave_search_mcp.render", 0.7)]
    with pytest.raises(ValueError):
        summarize_imports([], [run], ([0.1], [0.5], [0.9]))


def test_server_profile_groups_own_time_by_package() -> None:
    assert package_of("mcp_types/_types.py") == "MCP SDK (mcp, mcp_types)"
    assert package_of("brave_search_mcp/render.py") == "ours (brave_search_mcp)"
    assert package_of("(C code: str, re, json, unicodedata...)") == "C builtins (str, re, json, zlib...)"
    assert package_of("threading.py") == "other (stdlib, testkit...)"
    entries = [
        ("mcp/server/x.py", "mcp/server/x.py:f", 0.3, 0.3, 1),
        ("mcp_types/y.py", "mcp_types/y.py:g", 0.2, 0.2, 1),
        ("brave_search_mcp/a.py", "brave_search_mcp/a.py:h", 0.1, 0.6, 1),
    ]
    groups = by_package(entries, calls=1000)
    assert [group for group, _ in groups] == ["MCP SDK (mcp, mcp_types)", "ours (brave_search_mcp)"]
    assert [us for _, us in groups] == pytest.approx([500.0, 100.0])
    profile = ServerProfile("hit", 1000, 600.0, by_package(entries, 1000), rank(entries, 1000))
    text = render_server_profiles([profile])
    assert "| MCP SDK (mcp, mcp_types) | 500 |" in text
    assert "| **all** | **600** |" in text


# ------------------------------------------------------------------------------------------ pipeline


def _reply(cached: bool, error: bool = False) -> Timed:
    result = {"isError": error, "content": [], "structuredContent": {"meta": {"cached": cached}}}
    return Timed({"jsonrpc": "2.0", "id": 1, "result": result}, 0.0)


def test_check_replies_insists_on_cache_hits_without_errors() -> None:
    check_replies([_reply(True), _reply(True)])
    with pytest.raises(BenchError, match="missed the cache"):
        check_replies([_reply(True), _reply(False)])
    with pytest.raises(BenchError, match="failed"):
        check_replies([_reply(True, error=True)])


def _pipeline(calls: int, wall: float, hwm_kb: int) -> PipelineResult:
    return PipelineResult(calls, wall, 0, 70_000, hwm_kb, hwm_kb)


def test_pipeline_targets() -> None:
    assert judge_pipeline(_pipeline(1000, 0.5, 70_000)) == (True, True)
    assert judge_pipeline(_pipeline(1000, 2.0, 80_000)) == (False, False)  # 81.9 MB > 80 MB
    rows = pipeline_rows(_pipeline(200, 0.5, 90_000))
    assert rows[1].status == "—"  # memory is only judged after 1,000 calls


# ------------------------------------------------------------------------------------------ side by side


def _figures(name: str, start: float, miss: float, repeat: float) -> ServerFigures:
    return ServerFigures(name, [start] * 3, 5000, [0.002], [miss] * 3, [repeat] * 3, [0.05], 70_000, 33)


def test_side_rows_judge_the_ratios() -> None:
    side = SideBySide(_figures(OURS, 1.0, 0.006, 0.002), _figures("official", 0.5, 0.010, 0.010), [0.98])
    rows = {row.measurement: row for row in side_rows(side)}
    assert (
        rows['Start → `initialize` vs the SDK floor `python -c "from mcp.server.mcpserver import MCPServer"`'].status
        == "met"
    )
    assert rows["One web call, cache miss (round trip over stdio)"].status == "met"  # 0.6 ≤ 0.75
    hit = rows["Our cache hit vs the official server's miss (it has no cache), end to end"]
    assert hit.status == "met"
    assert hit.target.startswith("0.20×")
    parallel = next(row for row in rows.values() if row.measurement.startswith("10 distinct web calls in parallel"))
    assert "; rounds: 1; the per-call overhead section below measures it over more" in parallel.measurement


def test_missed_ratios_come_with_causes_and_a_skip_is_one_line() -> None:
    side = SideBySide(_figures(OURS, 2.0, 0.009, 0.006), _figures("official", 0.5, 0.010, 0.010), [1.0])
    speed = SpeedResults(quick=False, side=side, pipeline=_pipeline(1000, 2.0, 90_000))
    causes = " ".join(speed_causes(speed))
    for part in ("Start-up vs floor", "Cache miss vs official", "Cache hit vs official miss", "Pipelined", "Peak RSS"):
        assert part in causes
    quick = render_speed(SpeedResults(quick=True, official_note=QUICK_SKIP))
    assert f"**{QUICK_SKIP}.**" in quick


def test_contenders_without_the_official_server_are_ours_alone() -> None:
    people = contenders("http://127.0.0.1:5555", None)
    assert [c.name for c in people] == [OURS]
    assert people[0].env["BRAVE_SEARCH_BASE_URL"] == "http://127.0.0.1:5555"


@pytest.mark.anyio
@pytest.mark.parametrize("one_write", [False, True])
async def test_parallel_wall_reads_every_reply_whether_written_line_by_line_or_in_one_write(one_write: bool) -> None:
    floor = floor_contenders(None)[0]  # the Python SDK's floor: a trivial tool, no fake behind it
    async with started(floor) as session:
        replies, wall = await parallel_wall(
            session, floor.arguments, "burst", tool=floor.tool, calls=4, one_write=one_write, check=floor.name
        )
    assert len(replies) == 4 and wall > 0
    assert {reply.message["result"]["content"][0]["text"] for reply in replies} == {"x" * 4000}
