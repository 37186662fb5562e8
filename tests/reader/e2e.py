"""What read_url's end-to-end tests share: a server environment with no Brave and no key, one tool call."""

from __future__ import annotations

from typing import Any

from testkit.stdio import server_env

NOT_BRAVE = "http://127.0.0.1:9"  # no Brave is reachable: read_url must not need it


def reader_env(**extra: str) -> dict[str, str]:
    """The server's environment: 127.0.0.2 (the test's site) opted in, no Brave key (keyless users read too)."""
    env = {**server_env(NOT_BRAVE, BRAVE_SEARCH_READ_ALLOWED_HOSTS="127.0.0.2"), **extra}
    del env["BRAVE_SEARCH_API_KEY"]
    return env


async def read_tool(session: Any, **arguments: Any) -> dict[str, Any]:
    """One read_url call over a stdio session: its result."""
    reply = await session.call("tools/call", {"name": "read_url", "arguments": arguments})
    result: dict[str, Any] = reply["result"]
    return result
