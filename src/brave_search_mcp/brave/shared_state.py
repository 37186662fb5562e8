"""One upstream's cache shared with every other process of the user (SQLite) or every replica (Redis).

The client keeps its in-process cache (it answers in microseconds); this layer adds a response cache with
cross-process single flight, so eight agents asking the same query send one request. (The rate limit
counted across processes is ``brave.limits``: the admissions over the same backend.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from brave_search_mcp.state.base import StateBackend


def upstream_id(base_url: str, key: str) -> str:
    """A name for one key at one origin that says neither (Brave limits per key)."""
    return "brave:" + hashlib.sha256(f"{base_url}\n{key}".encode()).hexdigest()[:16]


def pack(status: int, body: bytes) -> bytes:
    """One stored answer: a JSON header line, then the body as received."""
    return json.dumps({"status": status}).encode() + b"\n" + body


def unpack(value: bytes) -> tuple[int, bytes]:
    """The status and body of a stored answer."""
    head, _, body = value.partition(b"\n")
    return int(json.loads(head)["status"]), body


class SharedUpstream:
    """The shared response cache of one upstream key, in the client's own terms (its limits are ``BraveLimits``)."""

    def __init__(self, backend: StateBackend, upstream: str) -> None:
        self.backend = backend
        self._id = upstream
        self.namespace = f"{upstream}:"

    async def cached(
        self, key: str, fetch: Callable[[], Awaitable[tuple[int, bytes]]], ttl: float
    ) -> tuple[int, bytes, bool]:
        """``(status, body, hit)``: a fresh shared answer, or one fetch shared by every process asking at once."""
        fetched: list[tuple[int, bytes]] = []

        async def fetch_packed() -> bytes:
            status, body = await fetch()
            fetched.append((status, body))
            return pack(status, body)

        value, hit = await self.backend.cache.get_or_fetch(f"{self._id}:{key}", fetch_packed, ttl)
        if fetched:  # this call fetched the answer: it is what came back (no copy of the body out of ``value``)
            return *fetched[0], hit
        status, body = unpack(value)
        return status, body, hit

    async def snapshot(self) -> dict[str, Any]:
        """The backend's health, for the status tool."""
        return self.backend.health()
