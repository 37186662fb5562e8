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

from brave_search_mcp.brave.responses import Fetched
from brave_search_mcp.models import errors
from brave_search_mcp.state.base import Check, StateBackend
from brave_search_mcp.upstream.bodies import GZIP, decode_json_object, gunzip_capped


def upstream_id(base_url: str, key: str) -> str:
    """A name for one key at one origin that says neither (Brave limits per key)."""
    return "brave:" + hashlib.sha256(f"{base_url}\n{key}".encode()).hexdigest()[:16]


# Stored answers carry their content encoding ("gzip": Brave's bytes as received, a quarter of the decoded size).
# Versions before it stored decoded bodies without the field under the key without this segment: neither reads the
# other's values (a version that would misread one never finds it).
FORMAT = "v2"
IDENTITY = "identity"
Stored = tuple[int, bytes, str]  # status, the body as stored, its content encoding


def pack(status: int, body: bytes, encoding: str = IDENTITY) -> bytes:
    """One stored answer: a JSON header line, then the body as stored."""
    return json.dumps({"status": status, "encoding": encoding}).encode() + b"\n" + body


def unpack(value: bytes) -> Stored:
    """The status, body and content encoding of a stored answer."""
    head, _, body = value.partition(b"\n")
    fields = json.loads(head)
    return int(fields["status"]), body, str(fields.get("encoding", IDENTITY))


def _decoded(status: int, body: bytes, encoding: str, cap: int) -> Fetched:
    """A stored answer as the client hands it on; ParseError for one this version cannot read."""
    if not 200 <= status < 300:
        raise errors.ParseError(f"A stored Brave answer has the status {status}; only answers are stored.")
    if encoding == GZIP:
        body = gunzip_capped(body, cap)
    elif encoding != IDENTITY:
        raise errors.ParseError(f"A stored Brave answer has an encoding this version cannot read ({encoding!r}).")
    return Fetched(decode_json_object(body), status, 0, len(body), body, None)


class SharedUpstream:
    """The shared response cache of one upstream key, in the client's own terms (its limits are ``BraveLimits``)."""

    def __init__(self, backend: StateBackend, upstream: str) -> None:
        self.backend = backend
        self._id = upstream
        self.namespace = f"{upstream}:"

    async def cached(
        self, key: str, fetch: Callable[[], Awaitable[Stored]], ttl: float, check: Check | None = None
    ) -> tuple[Stored, bool]:
        """``((status, body, encoding), hit)``: a fresh shared answer, or one fetch shared by every process asking
        at once (a stored answer ``check`` refuses is dropped and fetched again)."""
        fetched: list[Stored] = []

        async def fetch_packed() -> bytes:
            stored = await fetch()
            fetched.append(stored)
            return pack(*stored)

        value, hit = await self.backend.cache.get_or_fetch(f"{self._id}:{FORMAT}:{key}", fetch_packed, ttl, check)
        if fetched:  # this call fetched the answer: it is what came back (no copy of the body out of ``value``)
            return fetched[0], hit
        return unpack(value), hit

    async def answer(self, key: str, upstream: Callable[[], Awaitable[Fetched]], ttl: float, cap: int) -> Fetched:
        """The answer to ``key``: this process's own fetch when it made one (the store keeps Brave's gzip bytes when
        the answer came gzip-encoded), else the stored answer, decoded under this process's ``cap`` (one that cannot
        be decoded is dropped from the store and fetched again)."""
        mine: list[Fetched] = []
        read: list[Fetched | errors.ResponseTooLarge] = []

        async def fetch() -> Stored:
            fetched = await upstream()
            mine.append(fetched)
            if fetched.wire is not None:
                return fetched.status, fetched.wire, GZIP
            return fetched.status, fetched.raw_body, IDENTITY

        def readable(value: bytes) -> bool:
            try:
                read.append(_decoded(*unpack(value), cap))
            except errors.ResponseTooLarge as exc:  # a good answer, over this process's cap: kept for the others
                read.append(exc)
            return True

        stored, _ = await self.cached(key, fetch, ttl, readable)
        if mine:
            return mine[0]
        found = read[-1] if read else _decoded(*stored, cap)
        if isinstance(found, errors.ResponseTooLarge):
            raise found
        return found

    async def snapshot(self) -> dict[str, Any]:
        """The backend's health, for the status tool."""
        return self.backend.health()
