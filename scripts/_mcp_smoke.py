"""The MCP stdio handshake of the register script's smoke check (stdlib only; scripts ship without testkit).

``_mcp_config.py smoke`` starts the server once (initialize + tools/list) so the client's first start is warm
and a broken install fails here, with the server's last stderr lines, rather than inside the client.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
from typing import Any


class SmokeError(Exception):
    """The server did not start, or did not answer the handshake as an MCP server does."""


def _read_message(proc: subprocess.Popen[str], want_id: int, deadline: float) -> dict[str, Any]:
    """Read JSON-RPC lines until the response with want_id arrives or the deadline passes."""
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
        if not ready:
            continue
        line = proc.stdout.readline()
        if not line:
            raise SmokeError("the server exited (closed its output) before answering")
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise SmokeError("the server printed something that is not JSON-RPC on stdout") from None
        if isinstance(message, dict) and message.get("id") == want_id:
            if "error" in message:
                raise SmokeError(f"the server answered with an error: {message['error']}")
            if isinstance(message.get("result"), dict):
                return message
    raise SmokeError("the server did not answer in time")


def smoke(command: str, arguments: list[str], extra_env: list[tuple[str, str]], timeout: float) -> str:
    """Start ``command`` once over stdio (initialize + tools/list); one line naming the server and its tools."""
    env = dict(os.environ)
    env.update(extra_env)
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryFile(mode="w+") as stderr_file:
        try:
            proc = subprocess.Popen(
                [command, *arguments],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr_file,
                env=env,
                text=True,
            )
        except OSError as exc:
            raise SmokeError(f"cannot start {command}: {exc.strerror}") from None
        assert proc.stdin is not None
        try:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "brave-search-mcp-register", "version": "1"},
                },
            }
            proc.stdin.write(json.dumps(init) + "\n")
            proc.stdin.flush()
            info = _read_message(proc, 1, deadline)["result"].get("serverInfo", {})
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n")
            proc.stdin.flush()
            tools = [tool["name"] for tool in _read_message(proc, 2, deadline)["result"].get("tools", [])]
        except (SmokeError, BrokenPipeError) as exc:
            reason = "the server exited before answering" if isinstance(exc, BrokenPipeError) else str(exc)
            stderr_file.seek(0)
            tail = stderr_file.read()[-1500:].strip()
            raise SmokeError(reason + (f"\nserver stderr (last lines):\n{tail}" if tail else "")) from None
        finally:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
    return f"{info.get('name', '?')} {info.get('version', '')}: {len(tools)} tools ({', '.join(tools)})"
