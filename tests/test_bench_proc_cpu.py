"""bench.proc_cpu: a server's CPU read from outside, and its main thread's share, through /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.proc_cpu import cpu_seconds, main_thread_seconds

SCHED = """python (4242, #threads: 3)
-------------------------------------------------------------------
se.exec_start                                :      98765432.123456
se.vruntime                                  :          1234.567890
se.sum_exec_runtime                          :          2500.125000
nr_switches                                  :                 1234
"""


def _fake_proc(root: Path, pid: int, sched: str | None) -> Path:
    task = root / str(pid) / "task" / str(pid)
    task.mkdir(parents=True)
    if sched is not None:
        (task / "sched").write_text(sched, encoding="ascii")
    return root


def test_the_main_threads_seconds_are_the_schedulers_exact_runtime(tmp_path: Path) -> None:
    assert main_thread_seconds(4242, _fake_proc(tmp_path, 4242, SCHED)) == pytest.approx(2.500125)


@pytest.mark.parametrize(
    "sched",
    [None, "nr_switches : 12\n", "se.sum_exec_runtime : not-a-number\n"],
    ids=["no sched file", "no runtime line", "garbled runtime"],
)
def test_a_kernel_that_does_not_say_gives_none_not_a_wrong_figure(tmp_path: Path, sched: str | None) -> None:
    assert main_thread_seconds(4242, _fake_proc(tmp_path, 4242, sched)) is None


def test_a_process_that_is_gone_gives_none(tmp_path: Path) -> None:
    assert main_thread_seconds(99999, tmp_path) is None


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_a_real_child_that_computed_has_spent_cpu_on_its_main_thread() -> None:
    work = "sum(range(3_000_000)); print('done', flush=True); input()"
    with subprocess.Popen(
        [sys.executable, "-c", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "done\n"
            main = main_thread_seconds(child.pid)
            total = cpu_seconds(child.pid)
        finally:
            child.kill()
    assert main is not None and main > 0.0
    assert total <= main + 0.02  # the process's figure is whole clock ticks of the same time (one thread)
    assert main_thread_seconds(os.getpid()) is not None
