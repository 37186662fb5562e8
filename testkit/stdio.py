"""The one client of a real ``python -m brave_search_mcp`` subprocess over its stdio pipes, for tests and bench.

Line-delimited JSON-RPC, as an MCP host writes it (the ``initialize`` handshake of ``Client(..., mode="legacy")``):
every wait bounded, every stdout line recorded so tests can prove the wire stayed clean, and each reply's
arrival time kept so the bench can time round trips without the cost of a client library.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from unittest.mock import patch

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from testkit.brave.auth import VALID_KEY

PROTOCOL = "2025-11-25"  # the latest handshake-era version: what mode="legacy" hosts send today
SERVER_NAME = "brave-search"
WAIT_SECONDS = 10.0  # the longest any single wait on the subprocess may take by default
_MAX_LINE = 32 * 1024 * 1024
# What tests tune: fast retries, a short attempt timeout, state in memory (one process, nothing shared).
_TUNED_FOR_TESTS = {
    "BRAVE_SEARCH_RETRY_BASE_MS": "5",
    "BRAVE_SEARCH_RETRY_MAX_MS": "20",
    "BRAVE_SEARCH_TIMEOUT_SECONDS": "2",
    "BRAVE_SEARCH_STATE": "memory",
}


def server_env(base_url: str, *, for_tests: bool = True, **extra: str) -> dict[str, str]:
    """A minimal environment: the fake's URL and a fake key; nothing from the developer's shell but PATH and HOME.

    ``for_tests`` adds fast retries, a 2 s attempt timeout and state in memory; without it the server runs on
    its shipped defaults, as the bench measures it. ``extra`` settings win over both.
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "BRAVE_SEARCH_API_KEY": VALID_KEY,
        "BRAVE_SEARCH_BASE_URL": base_url,
        **(_TUNED_FOR_TESTS if for_tests else {}),
    }
    env.update(extra)
    return env


def user_dirs(home: Path) -> dict[str, str]:
    """A user of their own under ``home``: the default SQLite state (state and cache directories) lands there,
    never in the developer's home, and the default key file is looked for there (none unless a test writes it)."""
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


@contextmanager
def as_user(home: Path) -> Iterator[None]:
    """This process as the user of ``user_dirs(home)`` while it lasts: platformdirs reads the environment itself,
    so the default files (``user_files.py``) are found where that user's subprocesses put them."""
    with patch.dict(os.environ, user_dirs(home)):
        yield


class RpcError(RuntimeError):
    """The server answered with a JSON-RPC error, wrote something that is not JSON-RPC, or closed its stdout."""


@dataclass(frozen=True)
class Timed:
    """A JSON-RPC response and when it arrived (on the session's clock)."""

    message: dict[str, Any]
    arrived: float


def result_of(message: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` of a JSON-RPC response, or an RpcError carrying its ``error``."""
    if "error" in message:
        raise RpcError(f"JSON-RPC error: {str(message['error'])[:300]}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise RpcError(f"JSON-RPC response without an object result: {str(message)[:300]}")
    return result


class RpcSession:
    """Line-delimited JSON-RPC over a subprocess's pipes, recording every stdout line and when each reply came."""

    def __init__(
        self,
        process: Process,
        *,
        clock: Callable[[], float] = time.monotonic,
        timeout: float = WAIT_SECONDS,
        spawned_at: float | None = None,
        client_name: str = "testkit",
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.clock = clock
        self.timeout = timeout  # the longest one wait for a reply may take, unless a call says otherwise
        self.spawned_at = clock() if spawned_at is None else spawned_at  # taken before the spawn, when timed
        self.client_name = client_name  # clientInfo.name in the handshake
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.lines: list[bytes] = []
        self._next_id = 0
        self._pending: dict[Any, Timed] = {}
        self._errors_without_id: list[dict[str, Any]] = []
        self.arrived: dict[Any, float] = {}  # reply id -> when its line was read (the session's clock)

    @property
    def pid(self) -> int:
        """The server's process id (the Python process itself: no shell in between)."""
        return self.process.pid

    async def send(self, message: Mapping[str, Any]) -> None:
        """One message as one line."""
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        """Bytes exactly as given: for lines a well-behaved client would never send."""
        await self._stdin.send(data)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """A JSON-RPC notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a request with a fresh id, without waiting; returns the id."""
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": dict(params or {})})
        return self._next_id

    async def _read_one(self, waiting_for: object) -> None:
        try:
            line = await self._stdout.receive_until(b"\n", _MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
            raise RpcError(f"server closed stdout while waiting for {waiting_for}") from exc
        arrived = self.clock()
        self.lines.append(line)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise RpcError(f"server wrote a non-object JSON-RPC message: {line[:200]!r}")
        if "id" in message and ("result" in message or "error" in message):
            if message["id"] is None:
                self._errors_without_id.append(message)
            else:
                self._pending[message["id"]] = Timed(message, arrived)
                self.arrived[message["id"]] = arrived

    async def receive(self, request_id: Any, timeout: float | None = None) -> Timed:
        """The reply carrying ``request_id`` and when it arrived (replies to other ids are kept for later)."""
        with anyio.fail_after(self.timeout if timeout is None else timeout):
            while request_id not in self._pending:
                await self._read_one(f"request {request_id}")
        return self._pending.pop(request_id)

    async def response(self, request_id: Any, timeout: float | None = None) -> dict[str, Any]:
        """The reply carrying ``request_id``."""
        return (await self.receive(request_id, timeout)).message

    async def error_without_id(self, timeout: float | None = None) -> dict[str, Any]:
        """The next reply whose id is null: the answer to a line whose id could not be read."""
        with anyio.fail_after(self.timeout if timeout is None else timeout):
            while not self._errors_without_id:
                await self._read_one("a reply without an id")
        return self._errors_without_id.pop(0)

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Request and wait for its reply."""
        return await self.response(await self.request(method, params))

    async def round_trip(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> tuple[dict[str, Any], float]:
        """Request, wait, and return ``(result, seconds from send to reply)``; a JSON-RPC error is an RpcError."""
        sent = self.clock()
        timed = await self.receive(await self.request(method, params), timeout)
        return result_of(timed.message), timed.arrived - sent

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], timeout: float | None = None
    ) -> tuple[dict[str, Any], float]:
        """``tools/call``; the CallToolResult as sent and the round-trip seconds."""
        return await self.round_trip("tools/call", {"name": name, "arguments": dict(arguments)}, timeout)

    async def initialize(self, server_name: str = SERVER_NAME) -> float:
        """The handshake (``serverInfo.name`` checked); seconds from spawn to the ``initialize`` reply."""
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": self.client_name, "version": "0"},
        }
        timed = await self.receive(await self.request("initialize", params))
        result = result_of(timed.message)
        if result.get("serverInfo", {}).get("name") != server_name:
            raise RpcError(f"unexpected initialize result: {str(result)[:300]}")
        await self.notify("notifications/initialized")
        return timed.arrived - self.spawned_at

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

    async def stop(self, timeout: float = WAIT_SECONDS) -> bool:
        """EOF, a bounded wait, then kill if it lingers; True when the server exited by itself."""
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await self.close_stdin()
            with anyio.move_on_after(timeout):
                await self.process.wait()
            exited = self.process.returncode is not None
            if not exited:
                self.process.kill()
                with anyio.move_on_after(timeout):
                    await self.process.wait()
        return exited


@asynccontextmanager
async def stdio_server(
    env: Mapping[str, str], *, stderr: IO[bytes] | None = None, cwd: Path | None = None
) -> AsyncIterator[RpcSession]:
    """A started, initialized server; on exit: EOF, a bounded wait, and proof that stdout held only JSON-RPC."""
    command = [sys.executable, "-m", "brave_search_mcp"]
    async with await anyio.open_process(command, env=dict(env), stderr=stderr, cwd=cwd) as process:
        session = RpcSession(process, client_name="pytest")
        await session.initialize()
        try:
            yield session
        finally:
            if not await session.stop():  # never leave a stuck server behind, but do fail the test
                raise AssertionError(f"the server did not exit within {WAIT_SECONDS} s of EOF")
            # everything the server ever wrote to stdout, to the last byte, was JSON-RPC
            session.lines.extend((await session.drain()).splitlines())
            for line in session.lines:
                assert json.loads(line)["jsonrpc"] == "2.0"
