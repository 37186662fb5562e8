"""The one helper for driving a real ``python -m brave_search_mcp`` subprocess over its stdio pipes.

Line-delimited JSON-RPC, every wait bounded, every stdout line recorded so tests can prove the wire stayed clean.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from testkit.brave.brave import VALID_KEY

PROTOCOL = "2025-11-25"
WAIT_SECONDS = 10.0  # the longest any single wait on the subprocess may take
_MAX_LINE = 16 * 1024 * 1024


def server_env(base_url: str, **extra: str) -> dict[str, str]:
    """A minimal environment: the fake's URL, a fake key, fast retries; nothing from the developer's shell."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "BRAVE_SEARCH_API_KEY": VALID_KEY,
        "BRAVE_SEARCH_BASE_URL": base_url,
        "BRAVE_SEARCH_RETRY_BASE_MS": "5",
        "BRAVE_SEARCH_RETRY_MAX_MS": "20",
        "BRAVE_SEARCH_TIMEOUT_SECONDS": "2",
        "BRAVE_SEARCH_STATE": "memory",  # one process, nothing shared; the shared-state tests choose their own
    }
    env.update(extra)
    return env


class RpcSession:
    """Line-delimited JSON-RPC over the subprocess pipes, recording every stdout line."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.lines: list[bytes] = []
        self._next_id = 0
        self._pending: dict[Any, dict[str, Any]] = {}
        self._errors_without_id: list[dict[str, Any]] = []
        self.arrived: dict[Any, float] = {}  # reply id -> time.monotonic() when its line was read

    async def send(self, message: dict[str, Any]) -> None:
        """One message as one line."""
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        """Bytes exactly as given: for lines a well-behaved client would never send."""
        await self._stdin.send(data)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request with a fresh id and return the id."""
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        return self._next_id

    async def _read_one(self) -> None:
        line = await self._stdout.receive_until(b"\n", _MAX_LINE)
        self.lines.append(line)
        message = json.loads(line)
        if "id" in message and ("result" in message or "error" in message):
            if message["id"] is None:
                self._errors_without_id.append(message)
            else:
                self._pending[message["id"]] = message
                self.arrived[message["id"]] = time.monotonic()

    async def response(self, request_id: Any, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        """The reply carrying ``request_id`` (replies to other ids are kept for later)."""
        with anyio.fail_after(timeout):
            while request_id not in self._pending:
                await self._read_one()
        return self._pending.pop(request_id)

    async def error_without_id(self, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        """The next reply whose id is null: the answer to a line whose id could not be read."""
        with anyio.fail_after(timeout):
            while not self._errors_without_id:
                await self._read_one()
        return self._errors_without_id.pop(0)

    async def close_stdin(self) -> None:
        """EOF on stdin is how a host tells a stdio server to stop."""
        await self._stdin.aclose()

    async def drain(self) -> bytes:
        """Whatever stdout still holds after the process closed it."""
        rest = b""
        with anyio.fail_after(WAIT_SECONDS):
            while True:
                try:
                    rest += await self._stdout.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return rest

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Request and wait for its reply."""
        return await self.response(await self.request(method, params))


@asynccontextmanager
async def stdio_server(env: dict[str, str], *, stderr: IO[bytes] | None = None) -> AsyncIterator[RpcSession]:
    """A started, initialized server; on exit: EOF, a bounded wait, and proof that stdout held only JSON-RPC."""
    command = [sys.executable, "-m", "brave_search_mcp"]
    async with await anyio.open_process(command, env=env, stderr=stderr) as process:
        session = RpcSession(process)
        init = await session.call(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "pytest", "version": "0"}},
        )
        assert init["result"]["serverInfo"]["name"] == "brave-search"
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        try:
            yield session
        finally:
            if process.returncode is None:
                await session.close_stdin()
            with anyio.move_on_after(WAIT_SECONDS):
                await process.wait()
            if process.returncode is None:  # never leave a stuck server behind, but do fail the test
                process.kill()
                await process.wait()
                raise AssertionError(f"the server did not exit within {WAIT_SECONDS} s of EOF")
            # everything the server ever wrote to stdout, to the last byte, was JSON-RPC
            rest = await session.drain()
            for line in [*session.lines, *rest.splitlines()]:
                assert json.loads(line)["jsonrpc"] == "2.0"
