"""bench.overhead: per-call overhead beside the official server and each SDK's floor. No timing is asserted: the
section is rendered from constructed figures; the baseline extraction and the Python floor server run for real."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from bench.__main__ import SIDE_BENCHES
from bench.overhead import (
    BASELINE,
    FLOOR_TOOL,
    MEMORY,
    NODE_FLOOR,
    PY_FLOOR,
    REPLY_FLOOR,
    Figures,
    Overhead,
    extract_baseline,
    floor_contenders,
    render_overhead,
    reply_floor_contender,
)
from bench.results import FAST_RATE
from bench.sidebyside import OURS, THEIRS, contenders, started, timed_call
from bench.upstream import REPO_ROOT, load_recorded_page, make_fake
from testkit.brave.brave import VALID_KEY, WEB_PATH
from testkit.brave.http_server import FakeBraveServer


def _figures(miss_ms: float, parallel_ms: float) -> Figures:
    return Figures(miss=[miss_ms / 1000] * 3, parallel=[parallel_ms / 1000] * 3)


def test_the_section_gives_ratios_to_the_official_server_and_what_each_spends_beyond_its_sdk_floor() -> None:
    figures = {
        OURS: _figures(4.0, 30.0),
        MEMORY: _figures(3.0, 25.0),
        BASELINE: _figures(8.0, 60.0),
        THEIRS: _figures(4.0, 20.0),
        PY_FLOOR: _figures(1.0, 5.0),
        REPLY_FLOOR: _figures(1.25, 6.0),
        NODE_FLOOR: _figures(0.5, 2.5),
    }
    text = render_overhead(Overhead(figures, [], "abc1234", "2.1.4"))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| 1.00× |" in rows["ours (this revision)"] and "| 1.50× |" in rows["ours (this revision)"]
    assert "| 2.00× |" in rows["ours at abc1234 (before)"] and "| 3.00× |" in rows["ours at abc1234 (before)"]
    assert "Beyond its floor ours spends 3.00 ms, the official server 3.50 ms (0.86×); on memory state ours " in text
    assert "spends 2.00 ms (0.57×), so the state shared across processes costs 1.00 ms." in text
    assert "| 0.75× |" in rows["ours, `BRAVE_SEARCH_STATE=memory` (no state shared across processes)"]
    assert "the Python SDK's floor is 5.00 ms against the Node SDK's 2.50 ms (+2.50 ms" in text
    assert "| 0.31× |" in rows["Python SDK carrying our reply (our server, each call answered with its first reply)"]
    assert "Carrying our own reply the Python SDK takes 1.25 ms (+0.25 ms against its trivial floor); " in text
    assert "beyond that, the tool's own work is 2.75 ms." in text


def test_a_missing_official_server_or_baseline_is_said_and_the_rest_still_rendered() -> None:
    text = render_overhead(Overhead({OURS: _figures(4.0, 30.0)}, ["baseline x not run: no such revision"], None, None))
    assert "- baseline x not run: no such revision" in text
    assert "| ours (this revision) |" in text and "| — |" in text
    assert floor_contenders(None)[0].name == PY_FLOOR and len(floor_contenders(None)) == 1


def test_the_baseline_is_the_revisions_own_source(tmp_path: Path) -> None:
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    src = extract_baseline(head.stdout.strip(), tmp_path)
    assert isinstance(src, Path) and (src / "brave_search_mcp" / "__init__.py").is_file()
    assert "not run" in str(extract_baseline("no-such-revision-anywhere", tmp_path / "none"))


@pytest.mark.anyio
async def test_the_python_floor_server_answers_its_trivial_tool() -> None:
    floor = floor_contenders(None)[0]
    async with started(floor) as session:
        assert await timed_call(session, floor, "hello") > 0
        result, _ = await session.call_tool(FLOOR_TOOL, {"query": "again"})
    assert result["content"][0]["text"] == "x" * 4000


def test_the_bench_entry_point_runs_the_overhead_in_a_full_run() -> None:
    assert any(module == "bench.overhead" for module, _ in SIDE_BENCHES)


@pytest.mark.anyio
async def test_the_reply_floor_asks_brave_once_and_answers_every_call_with_that_reply(tmp_path: Path) -> None:
    fake = make_fake(load_recorded_page(), rate_per_second=FAST_RATE, keys=(VALID_KEY,))
    with FakeBraveServer(fake) as upstream:
        ours = contenders(upstream.base_url, None)[0]
        floor = reply_floor_contender(replace(ours, env={**ours.env, "HOME": str(tmp_path)}), tmp_path)
        async with started(floor) as session:
            first, _ = await session.call_tool(floor.tool, floor.arguments("rust async"))
            second, _ = await session.call_tool(floor.tool, floor.arguments("something else entirely"))
        assert upstream.fake.hits(WEB_PATH) == 1
    assert not first.get("isError") and first["structuredContent"]["sections"][0]["results"]
    assert "rust async" in first["content"][0]["text"]
    assert second == first


def _with_threads(fig: Figures, main_miss_ms: float, main_parallel_ms: float, cpu_parallel_ms: float) -> Figures:
    return replace(
        fig, main_miss=main_miss_ms / 1000, main_parallel=main_parallel_ms / 1000, cpu_parallel=cpu_parallel_ms / 1000
    )


def test_the_section_says_how_much_of_each_servers_cpu_its_main_thread_spends() -> None:
    figures = {
        OURS: _with_threads(_figures(4.0, 30.0), 2.5, 2.4, 2.5),
        THEIRS: _with_threads(_figures(4.0, 20.0), 2.0, 1.5, 2.5),
        PY_FLOOR: _with_threads(_figures(1.0, 5.0), 0.8, 0.4, 0.4),
        NODE_FLOOR: _with_threads(_figures(0.5, 2.5), 0.6, 0.2, 0.4),
    }
    text = render_overhead(Overhead(figures, [], None, "2.1.4"))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["official 2.1.4"].endswith("| 0.00 / 2.50 ms (2.00 / 1.50) |")
    assert "the official server spends 1.50 ms of CPU a call on its main thread and 1.00 ms on its other " in text
    assert "(40% of its CPU off the main thread); ours spends 2.40 ms on its main thread and 0.10 ms on others " in text
    assert "(the SDKs' floors: 0.40 ms on the Python floor's main thread, 0.20 ms on the Node floor's)" in text
    assert "where ours does 1.60× the official server's work per call." in text


def test_without_the_kernels_thread_figures_the_section_leaves_the_split_out() -> None:
    text = render_overhead(Overhead({OURS: _figures(4.0, 30.0), THEIRS: _figures(4.0, 20.0)}, [], None, "2.1.4"))
    assert "where the CPU runs" not in text and "(on the main thread)" in text
    assert "| 0.00 / 0.00 ms |" in text
