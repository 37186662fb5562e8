"""Many agents, one key: separate CLI processes share the default SQLite limiter and cache of their user; the
month's count is state, kept when the cache directory is wiped."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import user_dirs
from testkit.store_faults import SqliteLocked


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


# Issue 36: what a proxy or a broken edge once sent, and an older version stored as the learned plan.
IMPOSSIBLE_HEADERS = {
    "X-RateLimit-Limit": "1e308, inf",
    "X-RateLimit-Remaining": "nan, nan",
    "X-RateLimit-Reset": "inf, 1e308",
    "X-RateLimit-Policy": None,  # not sent: the limit list is all there is to read
}


def _warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The warning lines a CLI process logged (JSON lines on stderr)."""
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    return [line["msg"] for line in lines if line.get("level") == "warning"]


def test_one_answer_with_impossible_rate_headers_leaves_every_later_call_working(tmp_path: Path) -> None:
    """Issue 36: one 200 carrying ``X-RateLimit-Limit: 1e308, inf`` (and NaN, infinite resets) was stored as the plan
    (``plan 1e+308/s``); every later search of the user, in every process, ended INTERNAL_ERROR. Now those figures
    are ignored with one warning, and the next answer's real headers teach the plan."""
    with FakeBraveServer(rate_per_second=50) as upstream:
        upstream.fake.inject("headers", path="/web/search", headers=IMPOSSIBLE_HEADERS)
        first = _cli(tmp_path, upstream.base_url, "search", "first", "--json")
        later = [_cli(tmp_path, upstream.base_url, "search", query, "--json") for query in ("second", "third")]
        status = _cli(tmp_path, upstream.base_url, "status", "--json")
    for done in (first, *later):
        assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
        assert json.loads(done.stdout)["sections"], done.stdout[-300:]
    (warning,) = _warnings(first)
    assert "X-RateLimit-Limit: '1e308, inf'" in warning and "per_second=1e+308" in warning
    assert [_warnings(done) for done in later] == [[], []]
    assert json.loads(status.stdout)["throttle"]["plan_per_second"] == 50.0


def test_a_state_file_already_holding_an_impossible_plan_heals_on_the_next_call(tmp_path: Path) -> None:
    """Issue 36: a state file an older version wrote with the ``1e308``/s plan (and a start from the far future):
    the next search drops the record with one warning, probes, and learns the real plan."""
    with FakeBraveServer(rate_per_second=50) as upstream:
        assert _cli(tmp_path, upstream.base_url, "search", "makes the file", "--json").returncode == 0
        state = sqlite3.connect(tmp_path / ".local/state/brave-search-mcp/state.sqlite3")
        with state:
            poisoned = {"plan_rate": 1e308, "plan_burst": int(1e308), "clean": 0, "quota_every": 600.0}
            state.execute("UPDATE plans SET state = ? WHERE upstream LIKE '%|search'", (json.dumps(poisoned),))
            state.execute("INSERT INTO starts SELECT upstream, 1e308 FROM plans WHERE upstream LIKE '%|search'")
        state.close()
        healed = [_cli(tmp_path, upstream.base_url, "search", query, "--json") for query in ("after", "again")]
        status = _cli(tmp_path, upstream.base_url, "status", "--json")
    for done in healed:
        assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
    (warning,) = _warnings(healed[0])
    assert "stored rate-limit plan" in warning and "dropped" in warning
    assert _warnings(healed[1]) == []
    assert json.loads(status.stdout)["throttle"]["plan_per_second"] == 50.0


def test_searches_made_while_the_state_file_is_locked_are_counted_once_it_is_free(tmp_path: Path) -> None:
    """Issue 43 item 9: with the state file locked by another process, CLI searches reached Brave but their
    processes exited before the file was back, and the month's count never had them. Each now leaves what it owes
    in an owner-only journal beside the file (each next one takes the earlier ones into its own; the cap of 4
    holding meanwhile: the fourth search is refused); once
    the lock is gone, two processes racing to repay add each search exactly once."""
    cap = {"BRAVE_SEARCH_MONTHLY_REQUESTS": "4"}
    lock = SqliteLocked()
    lock.home = tmp_path
    with FakeBraveServer(rate_per_second=1000) as upstream:
        assert _cli(tmp_path, upstream.base_url, "search", "before", "--json", **cap).returncode == 0
        lock.strike([])
        try:
            during = [_cli(tmp_path, upstream.base_url, "search", q, "--json", **cap) for q in ("a", "b", "c", "d")]
            modes = [stat.S_IMODE(p.stat().st_mode) for p in lock.state_file.parent.glob("state.sqlite3.owed-*.json")]
        finally:
            lock.lift([])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAVE", "XDG_"))}
        env.update(BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=upstream.base_url, **user_dirs(tmp_path))
        command = [sys.executable, "-m", "brave_search_mcp", "status", "--json"]
        racing = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        assert [proc.wait(timeout=60) for proc in racing] == [0, 0]
        for proc in racing:
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
        final = _cli(tmp_path, upstream.base_url, "status", "--json", **cap)
        hits = upstream.fake.hits("/web/search")
    assert [d.returncode for d in during] == [0, 0, 0, 1], [d.stderr[-300:] for d in during]
    assert json.loads(during[3].stdout)["error"]["code"] == "QUOTA_EXCEEDED"
    assert hits == 4
    assert modes and set(modes) == {0o600}, modes
    assert json.loads(final.stdout)["throttle"]["month"]["requests"] == 4
    assert list(lock.state_file.parent.glob("state.sqlite3.owed-*")) == []
