"""The two servers the bench runs, ours and Brave's official one, as real stdio subprocesses against one fake.

Each is a ``Contender``: how to start it, its name in the handshake, and how it asks for a web search (both ask
for the same page: ten web results). Ours runs on its shipped defaults with HOME and the XDG folders in a
directory of the bench's, so its state (SQLite by default) starts empty wherever the release keeps it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit.brave.brave import VALID_KEY
from testkit.stdio import RpcSession, server_env

from .official import SERVER_NAME as OFFICIAL_NAME
from .official import OfficialServer, official_env
from .rpc import spawn_server

OURS, THEIRS = "ours", "official"
WEB_TOOL = "brave_web_search"
ONE_WRITE_FIRST_ID = 100_000  # ids of a one-write burst, built here: far above the session's own counter


@dataclass(frozen=True)
class Contender:
    """How to start one server, name it in its handshake, and shape a web search for it."""

    name: str
    server_name: str
    argv: list[str] | None  # None: ours (``python -m brave_search_mcp``)
    env: dict[str, str]
    cwd: Path | None
    arguments: Callable[[str], dict[str, Any]]


def our_arguments(query: str) -> dict[str, Any]:
    """Ten web results for ``query`` from our ``brave_web_search``."""
    return {"query": query, "max_results": 10, "result_filter": ["web"]}


def official_arguments(query: str) -> dict[str, Any]:
    """The same request to the official ``brave_web_search`` (Brave's ``count``; the same upstream page)."""
    return {"query": query, "count": 10, "result_filter": ["web"]}


def our_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """Our shipped defaults pointed at the fake, with HOME and every XDG folder under ``home`` (fresh state)."""
    folders = {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CACHE", "STATE", "DATA", "CONFIG")}
    return server_env(base_url, for_tests=False, HOME=str(home), **folders, **extra)


def ours(base_url: str, home: Path, **extra: str) -> Contender:
    """Our server against the fake at ``base_url``, its state under ``home``."""
    return Contender(OURS, "brave-search", None, our_env(base_url, home, **extra), None, our_arguments)


def theirs(base_url: str, official: OfficialServer) -> Contender:
    """The official server against the fake at ``base_url`` (run in its npm prefix, which has no ``.env``)."""
    env = official_env(base_url, VALID_KEY)
    return Contender(THEIRS, OFFICIAL_NAME, official.command(), env, official.cache_dir, official_arguments)


@asynccontextmanager
async def started(contender: Contender) -> AsyncIterator[RpcSession]:
    """A running, initialized server."""
    async with spawn_server(contender.env, argv=contender.argv, cwd=contender.cwd) as session:
        await session.initialize(contender.server_name)
        yield session


def text_of(result: Mapping[str, Any]) -> str:
    """The text content of a CallToolResult, joined: what the model reads."""
    content = result.get("content", [])
    return "".join(
        str(item.get("text", "")) for item in content if isinstance(item, dict) and item.get("type") == "text"
    )


def outcome(message: Mapping[str, Any]) -> str:
    """``ok``, our error code, ``error`` (the official server answers failures in plain text) or ``jsonrpc-error``."""
    result = message.get("result")
    if not isinstance(result, dict):
        return "jsonrpc-error"
    if not result.get("isError"):
        return "ok"
    error = (result.get("structuredContent") or {}).get("error") or {}
    return str(error.get("code") or "error")


def call_line(request_id: int, arguments: Mapping[str, Any]) -> bytes:
    """One ``tools/call`` of the web search as a JSON-RPC line."""
    params = {"name": WEB_TOOL, "arguments": dict(arguments)}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode() + b"\n"


@dataclass(frozen=True)
class Answered:
    """One call's reply and its round trip (seconds from its request's write to its reply's arrival)."""

    message: dict[str, Any]
    seconds: float


async def at_once(
    session: RpcSession, calls: Sequence[Mapping[str, Any]], *, one_write: bool = False
) -> tuple[list[Answered], float]:
    """Web searches written back to back (one pipe write per line, or all in one as a raw-pipe client does); their
    replies in order and the seconds from the first write to the last answer."""
    sent: list[float] = []
    if one_write:
        ids = [ONE_WRITE_FIRST_ID + n for n in range(len(calls))]
        data = b"".join(call_line(request_id, args) for request_id, args in zip(ids, calls, strict=True))
        sent = [time.perf_counter()] * len(ids)
        await session.send_raw(data)
    else:
        ids = []
        for args in calls:
            sent.append(time.perf_counter())
            ids.append(await session.request("tools/call", {"name": WEB_TOOL, "arguments": dict(args)}))
    replies = [await session.receive(request_id) for request_id in ids]
    answered = [Answered(reply.message, reply.arrived - at) for reply, at in zip(replies, sent, strict=True)]
    return answered, max(reply.arrived for reply in replies) - sent[0]
