"""The agent session: the script's shape, the verdicts beside the official server, and real runs against the fake."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bench.report import MET, MISSED, NOT_RUN, session_rows
from bench.servers import OURS, THEIRS, ours
from bench.session import SCRIPT, SessionRun, repeats, run_session, run_sessions
from bench.upstream import make_fake
from testkit.brave.http_server import FakeBraveServer


def test_the_script_is_26_searches_in_12_rounds_of_one_to_four_a_third_of_them_repeats() -> None:
    assert len(SCRIPT) == 12
    assert sum(len(queries) for queries in SCRIPT) == 26
    assert all(1 <= len(queries) <= 4 for queries in SCRIPT)
    assert all(len(set(queries)) == len(queries) for queries in SCRIPT)  # a repeat is never in flight with itself
    assert repeats() == (8, 4)  # 8 of 26 calls repeat an earlier round; 4 rounds are repeats only
    assert len({query for queries in SCRIPT for query in queries}) == 18


def test_repeats_count_only_what_an_earlier_round_asked() -> None:
    assert repeats([("a", "b"), ("a", "c"), ("c",), ("d", "d")]) == (2, 1)
    assert repeats([]) == (0, 0)


def _run(server: str, rps: int, wall: float, billed: int, failed: int = 0) -> SessionRun:
    return SessionRun(server, rps, wall, 26, failed, 26, billed, 26 - billed, [0.25] * 25 + [wall / 10])


def _row(rows: list[list[str]], label: str) -> list[str]:
    return next(row for row in rows if row[0] == label)


def test_at_20_rps_wall_and_billed_requests_are_judged_as_ours_over_the_official_servers() -> None:
    rows = session_rows(20, [_run(OURS, 20, 2.1, 18)], [_run(THEIRS, 20, 3.0, 26)])
    assert _row(rows, "wall time of the session")[1:] == ["2.10 s", "3.00 s", "0.70×", "≤ 1.00×", MET]
    assert _row(rows, "upstream requests billed (answered 200)")[1:] == ["18", "26", "0.69×", "≤ 0.75×", MET]
    slower = session_rows(20, [_run(OURS, 20, 3.3, 20)], [_run(THEIRS, 20, 3.0, 26)])
    assert _row(slower, "wall time of the session")[-2:] == ["≤ 1.00×", MISSED]
    assert _row(slower, "upstream requests billed (answered 200)")[3:] == ["0.77×", "≤ 0.75×", MISSED]


def test_at_1_rps_any_failed_call_of_ours_in_any_run_misses_and_the_official_failures_are_shown() -> None:
    theirs = [_run(THEIRS, 1, 3.0, 3, failed=23)] * 2
    rows = session_rows(1, [_run(OURS, 1, 21.0, 18), _run(OURS, 1, 22.0, 18)], theirs)
    assert _row(rows, "failed calls")[1:] == ["0", "23", "—", "0 (ours, every run)", MET]
    assert _row(rows, "wall time of the session")[1] == "21.50 s (21.00 s–22.00 s)"
    one_failed = session_rows(1, [_run(OURS, 1, 21.0, 18), _run(OURS, 1, 22.0, 18, failed=1)], theirs)
    assert _row(one_failed, "failed calls")[1:] == ["0.5 (0–1)", "23", "—", "0 (ours, every run)", MISSED]


def test_without_the_official_server_the_ratios_are_not_measured_rather_than_met() -> None:
    rows = session_rows(20, [_run(OURS, 20, 2.1, 18)], [])
    assert _row(rows, "wall time of the session")[2:] == ["—", "—", "≤ 1.00×", NOT_RUN]
    assert _row(rows, "per call p50")[1:4] == ["250 ms", "—", "—"]


@pytest.mark.anyio
async def test_a_session_of_ours_sends_each_distinct_query_once_and_counts_what_the_fake_saw(tmp_path: Path) -> None:
    with FakeBraveServer(make_fake(20), latency=0.02) as upstream:
        done = await run_session(ours(upstream.base_url, tmp_path), upstream, 20)
    assert (done.server, done.calls, done.failed, done.requests, done.billed, done.limited) == (OURS, 26, 0, 18, 18, 0)
    assert len(done.durations) == 26 and min(done.durations) > 0
    assert done.wall >= 8 * 0.02  # eight rounds ask Brave something new, each waiting its latency
    files = [path async for path in anyio.Path(tmp_path).rglob("*") if await path.is_file()]
    assert files  # its state (a fresh one) went to the bench's home


@pytest.mark.anyio
async def test_failed_calls_are_counted_and_nothing_is_billed_when_every_call_fails(tmp_path: Path) -> None:
    with FakeBraveServer(make_fake(20), latency=0.0) as upstream:
        wrong_key = ours(upstream.base_url, tmp_path, BRAVE_SEARCH_API_KEY="wrong-key-not-real")
        done = await run_session(wrong_key, upstream, 20)
    assert (done.calls, done.failed, done.billed) == (26, 26, 0)


@pytest.mark.anyio
async def test_sessions_without_the_official_server_say_why_and_still_run_ours() -> None:
    found = await run_sessions("official server skipped: node/npm not found on PATH", 1, plans=(20,), latency=0.0)
    assert found.skipped == "official server skipped: node/npm not found on PATH"
    assert found.official_version is None
    assert [run.billed for run in found.runs[20][OURS]] == [18] and found.runs[20][THEIRS] == []
