"""What the stdio transport's tests share: reading the server's stderr, checking error replies, bounded exits."""

from __future__ import annotations

from typing import IO, Any

import anyio
from anyio.abc import Process

EXIT_DEADLINE = 2.0  # issue 11: a stopped server is gone within 2 s, even with a call stuck upstream


def read_stderr(file: IO[bytes]) -> str:
    """Everything the server wrote to stderr so far (tests look for tracebacks and leaks there)."""
    file.seek(0)
    return file.read().decode("utf-8", "replace")


def assert_error(reply: dict[str, Any], code: int, request_id: Any) -> None:
    """``reply`` is a JSON-RPC error with ``code``, answering ``request_id`` (a client matches it by that id)."""
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == request_id
    assert reply["error"]["code"] == code
    assert "result" not in reply


async def exits_with(process: Process, seconds: float) -> int:
    """The exit code of ``process``, waiting at most ``seconds``; a process still running after that is killed."""
    try:
        with anyio.fail_after(seconds):
            return await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
