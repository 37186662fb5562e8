"""``python -m bench``: a real quick run writes its report; a missed target still exits 0, a broken bench exits 1."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
from bench.bursts import Scenario, burst
from bench.fleet import FLEET_HEADING, PLAIN, FleetResults, FleetRun
from bench.rpc import BenchError
from bench.run import Results
from bench.servers import ours
from bench.upstream import make_fake
from testkit.brave.http_server import FakeBraveServer


@pytest.fixture
def quiet_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() configures process logging; keep the test process as it was."""
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)


def test_a_quick_run_of_one_part_measures_it_and_writes_only_where_told(tmp_path: Path, quiet_logging: None) -> None:
    target = tmp_path / "report.md"
    out = io.StringIO()
    assert bench_main.main(["--quick", "--only", "calls", "--output", str(target)], out=out) == 0
    document = target.read_text(encoding="utf-8")
    assert document.startswith("# Benchmarks") and "**Quick run**" in document
    assert "| `tools/list`: the `tools` array, compact JSON (8 tools) |" in document
    assert "| Cache hit: `tools/call` round trip over stdio |" in document
    assert "## Agent session" not in document and "## Bursts" not in document  # the parts not asked for
    assert "python -m bench --quick --only calls --output" in document
    assert out.getvalue().startswith(document) and f"wrote {target}" in out.getvalue()


def test_a_partial_run_never_replaces_the_whole_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    report = tmp_path / "benchmarks.md"
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)

    async def nothing_measured(plan: Any, **kwargs: Any) -> Results:
        return Results(plan=plan, quick=True)

    monkeypatch.setattr(bench_main, "run_all", nothing_measured)
    out = io.StringIO()
    assert bench_main.main(["--quick", "--only", "startup"], out=out) == 0
    assert not report.exists() and "left alone" in out.getvalue()
    assert bench_main.main(["--quick", "--no-write"], out=io.StringIO()) == 0
    assert not report.exists()
    assert bench_main.main(["--quick"], out=io.StringIO()) == 0
    assert report.read_text(encoding="utf-8").startswith("# Benchmarks")


def test_the_fleet_alone_replaces_only_its_own_section(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\nkept\n\n## Command\n\n```\npython -m bench\n```\n", encoding="utf-8")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)

    async def fleet_measured(plan: Any, **kwargs: Any) -> Results:
        runs = [FleetRun(PLAIN, 5.0, 520, 0, 0, 189, 189, 189, 189, 0.3)]
        return Results(plan=plan, quick=True, fleet=FleetResults(runs, 4.6))

    monkeypatch.setattr(bench_main, "run_all", fleet_measured)
    assert bench_main.main(["--only", "fleet"], out=io.StringIO()) == 0
    text = report.read_text(encoding="utf-8")
    assert "kept" in text and FLEET_HEADING in text and "python -m bench --only fleet" in text
    assert text.index(FLEET_HEADING) < text.index("## Command") and text.endswith("python -m bench\n```\n")


def test_a_full_run_keeps_a_section_the_bench_does_not_write(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    """A section measured by hand (the converters beside the docs reader) was dropped by every full run."""
    report = tmp_path / "benchmarks.md"
    hand = "## Measured by hand\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    report.write_text(f"# Benchmarks\n\nold\n\n{hand}\n## Command\n\n```\npython -m bench\n```\n", encoding="utf-8")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)

    async def nothing_measured(plan: Any, **kwargs: Any) -> Results:
        return Results(plan=plan, quick=True)

    monkeypatch.setattr(bench_main, "run_all", nothing_measured)
    assert bench_main.main(["--quick"], out=io.StringIO()) == 0
    text = report.read_text(encoding="utf-8")
    assert "\nold\n" not in text and hand in text and text.index(hand) < text.index("## Command")


def test_the_command_exits_one_when_the_bench_itself_breaks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(plan: Any, **kwargs: Any) -> Any:
        raise BenchError("server closed stdout")

    monkeypatch.setattr(bench_main, "run_all", broken)
    out = io.StringIO()
    with caplog.at_level(logging.ERROR, logger="bench"):
        assert bench_main.main(["--output", str(tmp_path / "report.md")], out=out) == 1
    assert "server closed stdout" in caplog.text
    assert out.getvalue() == "" and not (tmp_path / "report.md").exists()


def test_bad_usage_exits_two(quiet_logging: None) -> None:
    with pytest.raises(SystemExit) as exited:
        bench_main.main(["--only", "everything"], out=io.StringIO())
    assert exited.value.code == 2


@pytest.mark.anyio
async def test_a_burst_in_one_pipe_write_counts_outcomes_429s_and_requests(tmp_path: Path) -> None:
    with FakeBraveServer(make_fake(1000)) as upstream:
        found = await burst(ours(upstream.base_url, tmp_path), upstream, Scenario("t", "", 5, 1000, True), "t")
    assert (found.calls, found.ok, found.codes, found.limited, found.requests) == (5, 5, {}, 0, 5)


@pytest.mark.parametrize("verbose", [False, True])
def test_the_bench_logs_its_progress_but_not_each_http_request_of_its_clients(verbose: bool) -> None:
    """The MCP clients' HTTP stack logs one "HTTP Request" line per call at INFO: hundreds inside a timed wall."""
    root, names = logging.getLogger(), ("bench", *bench_main.QUIET_LOGGERS)
    before = (root.level, list(root.handlers), {name: logging.getLogger(name).level for name in names})
    root.handlers[:] = []  # as in a fresh process (pytest's own handlers would make basicConfig a no-op)
    try:
        bench_main.configure_logging(verbose)
        assert logging.getLogger("bench.fleet").isEnabledFor(logging.DEBUG if verbose else logging.INFO)
        for name in ("httpx2", "httpcore2.http11", "mcp.client.streamable_http", "testkit.brave.http_server"):
            logger = logging.getLogger(name)
            assert not logger.isEnabledFor(logging.INFO) and logger.isEnabledFor(logging.WARNING), name
    finally:
        root.setLevel(before[0])
        root.handlers[:] = before[1]
        for name, level in before[2].items():
            logging.getLogger(name).setLevel(level)
