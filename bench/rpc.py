"""The server as an MCP host runs it: a real stdio subprocess spoken to in line-delimited JSON-RPC.

Raw JSON-RPC over the pipes (the ``initialize`` handshake that ``Client(..., mode="legacy")`` performs)
keeps the client's own cost out of every figure and lets the bench see the exact bytes on the wire,
the process id (for ``/proc``) and the server's stderr log lines.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "2025-11-25"  # the latest handshake-era version: what mode="legacy" hosts send today
SERVER_ARGS: tuple[str, ...] = ("-m", "brave_search_mcp")
MAX_LINE_BYTES = 32 * 1024 * 1024
RESPONSE_TIMEOUT = 60.0  # seconds; the slowest legitimate wait is the 1 rps burst (about 9.3 s)
EXIT_TIMEOUT = 10.0


class BenchError(RuntimeError):
    """The bench itself could not measure something (as opposed to a target being missed)."""


@dataclass(frozen=True)
class Timed:
    """A JSON-RPC response and when it arrived (``time.perf_counter`` seconds)."""

    message: dict[str, Any]
    arrived: float


def server_command(*python_flags: str) -> list[str]:
    """How the bench starts the server: this interpreter, ``-m brave_search_mcp``."""
    return [sys.executable, *python_flags, *SERVER_ARGS]


class RpcSession:
    """One server subprocess: send requests, collect responses by id, read its ``/proc`` status."""

    def __init__(self, process: Process, spawned_at: float) -> None:
        if process.stdin is None or process.stdout is None:
            raise BenchError("server process has no stdin/stdout pipe")
        self.process = process
        self.spawned_at = spawned_at
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0
        self._arrived: dict[int, Timed] = {}

    @property
    def pid(self) -> int:
        """The server's process id (the Python process itself: no shell in between)."""
        return self.process.pid

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a JSON-RPC notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._stdin.send(json.dumps(message).encode() + b"\n")

    async def send(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a request without waiting; returns its id."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": dict(params or {})}
        await self._stdin.send(json.dumps(message).encode() + b"\n")
        return self._next_id

    async def receive(self, request_id: int, timeout: float = RESPONSE_TIMEOUT) -> Timed:
        """The response to ``request_id``; other responses read meanwhile are kept with their arrival time."""
        with anyio.fail_after(timeout):
            while request_id not in self._arrived:
                try:
                    line = await self._stdout.receive_until(b"\n", MAX_LINE_BYTES)
                except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
                    raise BenchError(f"server closed stdout while request {request_id} was pending") from exc
                arrived = time.perf_counter()
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise BenchError(f"server wrote a non-object JSON-RPC message: {line[:200]!r}")
                if "id" in message and ("result" in message or "error" in message):
                    self._arrived[int(message["id"])] = Timed(message, arrived)
        return self._arrived.pop(request_id)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        """Send, wait, and return ``(result, seconds from send to response)``; a JSON-RPC error is a BenchError."""
        sent = time.perf_counter()
        request_id = await self.send(method, params)
        timed = await self.receive(request_id)
        return result_of(timed.message), timed.arrived - sent

    async def initialize(self, server_name: str = "brave-search") -> float:
        """The handshake; returns seconds from spawn to the ``initialize`` response (``serverInfo.name`` checked)."""
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "brave-search-mcp-bench", "version": "0"},
        }
        timed = await self.receive(await self.send("initialize", params))
        result = result_of(timed.message)
        if result.get("serverInfo", {}).get("name") != server_name:
            raise BenchError(f"unexpected initialize result: {str(result)[:300]}")
        await self.notify("notifications/initialized")
        return timed.arrived - self.spawned_at

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
        """``tools/call``; returns the CallToolResult as sent and the round-trip seconds."""
        return await self.request("tools/call", {"name": name, "arguments": dict(arguments)})

    def proc_status(self) -> dict[str, int]:
        """The ``Vm*`` lines of ``/proc/<pid>/status`` in kB (VmHWM is the peak resident set)."""
        return read_vm_status(Path(f"/proc/{self.pid}/status").read_text(encoding="utf-8"))

    async def shutdown(self) -> None:
        """Close stdin (how a host stops a stdio server), wait briefly, then kill if it lingers."""
        with anyio.CancelScope(shield=True):
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._stdin.aclose()
            with anyio.move_on_after(EXIT_TIMEOUT):
                await self.process.wait()
            if self.process.returncode is None:
                logger.warning("bench: server pid %s did not exit on EOF; killing it", self.pid)
                self.process.kill()
                with anyio.move_on_after(EXIT_TIMEOUT):
                    await self.process.wait()
            await self.process.aclose()


def result_of(message: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` of a JSON-RPC response, or a BenchError carrying its ``error``."""
    if "error" in message:
        raise BenchError(f"JSON-RPC error: {str(message['error'])[:300]}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise BenchError(f"JSON-RPC response without an object result: {str(message)[:300]}")
    return result


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
    env: Mapping[str, str],
    *,
    stderr_path: Path | None = None,
    python_flags: tuple[str, ...] = (),
    argv: list[str] | None = None,
    cwd: Path | None = None,
) -> AsyncIterator[RpcSession]:
    """Start our server, or ``argv`` (another stdio server), and always stop it afterwards.

    stderr is appended to ``stderr_path`` or discarded.
    """
    async with await anyio.open_file(stderr_path or os.devnull, "ab") as err:
        spawned_at = time.perf_counter()
        process = await anyio.open_process(
            argv or server_command(*python_flags),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err.wrapped,
        )
        session = RpcSession(process, spawned_at)
        try:
            yield session
        finally:
            await session.shutdown()


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


async def capture_stderr(argv: list[str], env: Mapping[str, str], timeout: float = 60.0) -> str:
    """Run a command to completion and return its stderr (for ``-X importtime``)."""
    with anyio.fail_after(timeout):
        done = await anyio.run_process(argv, env=dict(env), check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise BenchError(f"{argv!r} exited with status {done.returncode}: {done.stderr[-300:]!r}")
    return done.stderr.decode("utf-8", errors="replace")
