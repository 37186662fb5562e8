"""CPU a server process has used, read from outside through ``/proc``: the whole process, and its main thread alone.

Why the main thread: an asyncio server (ours) does all of a call's work on it, while Node hands part of its work to
helper threads (V8's optimizing compiler above all, its garbage collector, zlib). When calls queue up, the wall
follows what the main thread must do, so the split says how much of a server's CPU can overlap with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

PROC = Path("/proc")
RUNTIME_FIELD = "se.sum_exec_runtime"  # milliseconds on the CPU, kept by the scheduler to the nanosecond


def cpu_seconds(pid: int, proc: Path = PROC) -> float:
    """User + system CPU seconds a process has used so far, its ended threads included (``/proc/<pid>/stat``)."""
    fields = (proc / str(pid) / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_thread_seconds(pid: int, proc: Path = PROC) -> float | None:
    """CPU seconds the process's main thread has used so far, or None where the kernel does not say."""
    try:
        text = (proc / str(pid) / "task" / str(pid) / "sched").read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == RUNTIME_FIELD:
            try:
                return float(value) / 1000
            except ValueError:
                return None
    return None


class Reading(NamedTuple):
    """CPU seconds so far: the whole process's (in whole clock ticks) and its main thread's (exact; None: unknown)."""

    process: float
    main: float | None


def reading(pid: int, proc: Path = PROC) -> Reading:
    """Both figures of ``pid`` now."""
    return Reading(cpu_seconds(pid, proc), main_thread_seconds(pid, proc))


def per_call(start: Reading, end: Reading, calls: int) -> Reading:
    """CPU seconds per call between two readings; the process's is never below its main thread's (it is whole clock
    ticks of the same time, the thread's is exact)."""
    process = (end.process - start.process) / calls
    if start.main is None or end.main is None:
        return Reading(process, None)
    main = (end.main - start.main) / calls
    return Reading(max(process, main), main)
