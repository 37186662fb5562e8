"""The fake Brave in its own process (bench/brave_process.py): it serves, counts, resets, and never outlives the
``with`` or the bench that started it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from bench.brave_process import STOP_SECONDS, BraveProcess, brave_process
from testkit.brave.brave import VALID_KEY, WEB_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]


def _search(brave: BraveProcess, query: str) -> httpx2.Response:
    return httpx2.get(
        brave.base_url + WEB_PATH, params={"q": query}, headers={"X-Subscription-Token": VALID_KEY}, timeout=5
    )


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (an orphan's new parent may be slow to)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded polling of the process's exit
        if _gone(pid):
            return True
        time.sleep(0.02)
    return _gone(pid)


def test_the_fake_in_its_own_process_answers_counts_a_429_past_its_plan_and_resets(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with brave_process(1) as brave:
        assert brave.process.pid != os.getpid() and brave.process.is_alive()
        answer = _search(brave, "hello world")
        assert answer.status_code == 200 and answer.json()["web"]["results"]  # the recorded page, sliced
        assert (brave.hits(WEB_PATH), brave.hits(WEB_PATH, status=200), brave.rate_limited()) == (1, 1, 0)
        assert _search(brave, "again").status_code == 429  # a 1/s plan: the second request at once is refused
        assert (brave.hits(WEB_PATH), brave.hits(WEB_PATH, status=200), brave.rate_limited()) == (2, 1, 1)
        assert brave.hits(WEB_PATH, status=429) == 1 and brave.hits("/nowhere") == 0
        brave.reseed()
        brave.reset()
        assert (brave.hits(), brave.rate_limited()) == (0, 0)
        base_url = brave.base_url
    assert brave.process.exitcode is not None  # stopped and reaped on the way out
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(base_url + WEB_PATH, timeout=2)
    assert "fake brave" not in capfd.readouterr().err  # the child's access lines stay quiet


def test_the_child_is_gone_when_the_body_raises() -> None:
    started: list[BraveProcess] = []

    def failing_bench() -> None:
        with brave_process(50) as brave:
            started.append(brave)
            assert _search(brave, "x").status_code == 200
            raise KeyError("the bench failed")

    with pytest.raises(KeyError):
        failing_bench()
    assert started[0].process.exitcode is not None


def test_a_command_the_child_fails_raises_in_the_bench_and_the_child_serves_on() -> None:
    with brave_process(50) as brave:
        assert _search(brave, "x").status_code == 200
        with pytest.raises(RuntimeError, match="failed hits: TypeError"):
            brave.hits(42)  # type: ignore[arg-type]  # the child's FakeBrave.hits raises on a path that is no str
        assert brave.hits(WEB_PATH) == 1  # the same child, still answering


def test_a_child_that_cannot_start_or_does_not_serve_in_time_fails_with_a_clear_error_and_leaves_nothing() -> None:
    with pytest.raises(RuntimeError, match="could not start: ValueError"), brave_process(50, latency=-1.0):
        pass
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"did not serve within 0\.001 s"), brave_process(50, start_seconds=0.001):
        pass
    assert time.monotonic() - started < STOP_SECONDS  # killed at once, not waited for
    assert multiprocessing.active_children() == []


def test_the_child_does_not_outlive_a_bench_killed_outright() -> None:
    """SIGKILL runs no cleanup in the bench: the child still stops, on its pipe's close."""
    program = (
        "import sys\n"
        "from bench.brave_process import brave_process\n"
        "if __name__ == '__main__':\n"
        "    with brave_process(50) as brave:\n"
        "        print(brave.process.pid, flush=True)\n"
        "        sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", program], cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as bench:  # its streams closed and the bench reaped on the way out
        try:
            assert bench.stdout is not None
            child = int(bench.stdout.readline())
            assert not _gone(child)
            bench.send_signal(signal.SIGKILL)
            bench.wait(timeout=5)
            assert _wait_gone(child)
        finally:
            bench.kill()  # nothing once it is gone
