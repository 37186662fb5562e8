"""Many agents, one key: separate CLI processes share the default SQLite limiter and cache of their user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer


def _run_all(queries: list[str], base_url: str, cache_home: Path) -> list[subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env.update(
        BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=base_url, XDG_CACHE_HOME=str(cache_home)
    )  # BRAVE_SEARCH_STATE unset: the default, SQLite in the user's cache directory
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "brave_search_mcp", "search", query, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for query in queries
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_processes_on_a_one_per_second_plan_share_one_limiter_and_get_no_429(tmp_path: Path) -> None:
    with FakeBraveServer(rate_per_second=1) as plan:
        results = _run_all([f"shared limiter {n}" for n in range(4)], plan.base_url, tmp_path)
        assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr[-300:] for r in results]
        assert plan.fake.rate_limited_count == 0  # each process alone would have drawn 429s
        assert plan.fake.hits("/web/search") == 4
    assert (tmp_path / "brave-search-mcp").exists()


def test_processes_asking_the_same_query_send_one_upstream_request(tmp_path: Path) -> None:
    with FakeBraveServer(rate_per_second=50) as upstream:
        results = _run_all(["the same query"] * 4, upstream.base_url, tmp_path)
        assert all(r.returncode == 0 for r in results), [r.stderr[-300:] for r in results]
        assert upstream.fake.hits("/web/search") == 1
    cached = [json.loads(r.stdout)["meta"]["cached"] for r in results]
    assert cached.count(False) == 1 and cached.count(True) == 3
