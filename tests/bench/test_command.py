"""``python -m bench``: prints, writes the document, exits 0 when a target is missed and 1 when the bench breaks."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
from bench.results import Results
from bench.rpc import BenchError
from tests.bench.figures import bench_results

# ------------------------------------------------------------------------------------------------ the command


@pytest.fixture
def quiet_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() configures process logging; keep the test process as it was."""
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)


async def _fake_run(plan: Any, *, quick: bool) -> Results:
    return bench_results(hit_ms=2.0)


async def _broken_run(plan: Any, *, quick: bool) -> Results:
    raise BenchError("server closed stdout")


def test_main_prints_the_table_writes_the_document_and_exits_zero_even_if_a_target_is_missed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet_logging: None
) -> None:
    monkeypatch.setattr(bench_main, "run_all", _fake_run)
    out = io.StringIO()
    target = tmp_path / "docs" / "benchmarks.md"
    # the speed side (real servers, ~20 s) has its own tests in test_speed.py
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
