"""The browser processes a test's own process started, found in /proc (Linux): to kill one, or to prove none is left.

Playwright starts Chromium under its driver, which this process (or a server subprocess it started) started; a
browser's main process is the one without a ``--type=`` role (renderers, the GPU and network services have one).
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
MAX_DEPTH = 10  # the process tree is walked this many generations down


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state
    return parents


def browser_processes(root: int | None = None) -> list[int]:
    """Process ids of Chromium main processes descended from ``root`` (this process by default)."""
    top = os.getpid() if root is None else root
    parents = _parents()
    tree = {top}
    for _ in range(MAX_DEPTH):
        tree |= {pid for pid, parent in parents.items() if parent in tree}
    found = []
    for pid in sorted(tree - {top}):
        try:
            command = (PROC / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        program = command.split(b"\0")[0].split(b" ")[0]  # Chromium's children rewrite theirs as one string
        if b"chrom" in Path(program.decode(errors="replace")).name.encode() and b"--type=" not in command:
            found.append(pid)
    return found


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (a zombie not yet reaped counts as gone)."""
    running = []
    for pid in pids:
        try:
            stat = (PROC / str(pid) / "stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            running.append(pid)
    return running
