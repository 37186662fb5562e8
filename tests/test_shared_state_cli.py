"""Many agents, one key: separate CLI processes share the default SQLite limiter and cache of their user; the
month's count is state, kept when the cache directory is wiped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import user_dirs


def _run_all(queries: list[str], base_url: str, home: Path) -> list[subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env.update(
        BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=base_url, **user_dirs(home)
    )  # BRAVE_SEARCH_STATE unset: the default, SQLite in the user's state and cache directories
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
    assert (tmp_path / ".local/state/brave-search-mcp/state.sqlite3").exists()
    assert (tmp_path / ".cache/brave-search-mcp/cache.sqlite3").exists()


def test_processes_asking_the_same_query_send_one_upstream_request(tmp_path: Path) -> None:
    with FakeBraveServer(rate_per_second=50) as upstream:
        results = _run_all(["the same query"] * 4, upstream.base_url, tmp_path)
        assert all(r.returncode == 0 for r in results), [r.stderr[-300:] for r in results]
        assert upstream.fake.hits("/web/search") == 1
    cached = [json.loads(r.stdout)["meta"]["cached"] for r in results]
    assert cached.count(False) == 1 and cached.count(True) == 3


def _cli(home: Path, base_url: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """One CLI process of the user living in ``home``, run to its end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAVE", "XDG_"))}
    env.update(BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=base_url, **user_dirs(home), **extra)
    command = [sys.executable, "-m", "brave_search_mcp", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_spending_count_survives_wiping_the_cache_directory(tmp_path: Path) -> None:
    """Issue 35: the month's count lived in the cache directory, so a cleaner's ``rm -rf ~/.cache/brave-search-mcp``
    reset the spending cap. With a cap of 3: two searches, the wipe, then a fresh process's third search is served
    and the fourth refused naming the cap; status names where the state and the cache live."""
    cap = {"BRAVE_SEARCH_MONTHLY_REQUESTS": "3"}
    with FakeBraveServer(rate_per_second=1000) as upstream:
        for query in ("first", "second"):
            done = _cli(tmp_path, upstream.base_url, "search", query, "--json", **cap)
            assert done.returncode == 0, done.stderr[-500:]
        shutil.rmtree(tmp_path / ".cache" / "brave-search-mcp")
        third = _cli(tmp_path, upstream.base_url, "search", "third", "--json", **cap)
        fourth = _cli(tmp_path, upstream.base_url, "search", "fourth", "--json", **cap)
        status = _cli(tmp_path, upstream.base_url, "status", "--json", **cap)
        text = _cli(tmp_path, upstream.base_url, "status", **cap)
        assert upstream.fake.hits("/web/search") == 3
    assert third.returncode == 0, third.stderr[-500:]
    refused = json.loads(fourth.stdout)["error"]
    assert (fourth.returncode, refused["code"], refused["details"]["cap"]) == (1, "QUOTA_EXCEEDED", 3)
    report = json.loads(status.stdout)
    assert (report["throttle"]["month"]["requests"], report["status"]) == (3, "paused")
    state_file = tmp_path / ".local/state/brave-search-mcp/state.sqlite3"
    cache_file = tmp_path / ".cache/brave-search-mcp/cache.sqlite3"
    assert (report["state"]["location"], report["state"]["cache_location"]) == (str(state_file), str(cache_file))
    assert f"state: {state_file} (sqlite); cache: {cache_file}" in text.stdout.splitlines()
    assert cache_file.exists()  # made again by the third search
