"""A server as an MCP host runs it: a real stdio subprocess, spoken to by the one stdio client (testkit/stdio.py).

Raw JSON-RPC over the pipes (the ``initialize`` handshake that ``Client(..., mode="legacy")`` performs) keeps a
client library's own cost out of every figure and gives the bench the process id (for ``/proc``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process

from testkit.stdio import RpcSession

logger = logging.getLogger(__name__)

SERVER_ARGS: tuple[str, ...] = ("-m", "brave_search_mcp")
RESPONSE_TIMEOUT = 60.0  # seconds; the slowest legitimate wait is a call queued behind the 20/s plan (about 10 s)
EXIT_TIMEOUT = 10.0
CLIENT_NAME = "brave-search-mcp-bench"


class BenchError(RuntimeError):
    """The bench itself could not measure something (as opposed to a target being missed)."""


def server_command() -> list[str]:
    """How the bench starts the server: this interpreter, ``-m brave_search_mcp``."""
    return [sys.executable, *SERVER_ARGS]


def proc_status(pid: int) -> dict[str, int]:
    """The ``Vm*`` lines of ``/proc/<pid>/status`` in kB (VmHWM is the peak resident set)."""
    return read_vm_status(Path(f"/proc/{pid}/status").read_text(encoding="utf-8"))


def read_vm_status(text: str) -> dict[str, int]:
    """Parse ``VmHWM:  12345 kB``-style lines into ``{"VmHWM": 12345, ...}`` (kB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and name.startswith("Vm") and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            values[name] = int(parts[0])
    return values


@asynccontextmanager
async def spawn_server(
    env: Mapping[str, str], *, argv: list[str] | None = None, cwd: Path | None = None
) -> AsyncIterator[RpcSession]:
    """Start our server, or ``argv`` (another stdio server), and always stop it afterwards.

    stderr is discarded (the servers log there); replies are timed on ``time.perf_counter``.
    """
    spawned_at = time.perf_counter()
    process = await anyio.open_process(
        argv or server_command(),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    session = RpcSession(
        process, clock=time.perf_counter, timeout=RESPONSE_TIMEOUT, spawned_at=spawned_at, client_name=CLIENT_NAME
    )
    try:
        yield session
    finally:
        if not await session.stop(EXIT_TIMEOUT):
            logger.warning("bench: server pid %s did not exit on EOF; killed it", session.pid)
        await process.aclose()


async def _reap(process: Process) -> None:
    """Kill a command still running (a timeout or a failure cut it short) and release its pipes."""
    if process.returncode is None:
        process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(EXIT_TIMEOUT):
            await process.wait()
    await process.aclose()


async def time_command(argv: list[str], env: Mapping[str, str], timeout: float = 60.0) -> float:
    """Seconds from spawn to exit of a command whose output is discarded; it must exit 0."""
    started = time.perf_counter()
    process = await anyio.open_process(
        argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        with anyio.fail_after(timeout):
            code = await process.wait()
        elapsed = time.perf_counter() - started
    finally:
        await _reap(process)
    if code != 0:
        raise BenchError(f"{argv!r} exited with status {code}")
    return elapsed


async def time_to_output(argv: list[str], env: Mapping[str, str], timeout: float = 60.0) -> float:
    """Seconds from spawn to the first byte the command writes on stdout (its exit is awaited, not timed)."""
    started = time.perf_counter()
    process = await anyio.open_process(
        argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        if process.stdout is None:
            raise BenchError("command has no stdout pipe")
        with anyio.fail_after(timeout):
            try:
                await process.stdout.receive(1)
            except anyio.EndOfStream:
                raise BenchError(f"{argv!r} exited without writing to stdout") from None
            elapsed = time.perf_counter() - started
            code = await process.wait()
    finally:
        await _reap(process)
    if code != 0:
        raise BenchError(f"{argv!r} exited with status {code}")
    return elapsed
