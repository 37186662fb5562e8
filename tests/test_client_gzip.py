"""Brave's gzip answers: decoded once under the byte cap, and kept in the shared cache as the bytes Brave sent."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.shared_state import FORMAT, SharedUpstream, pack, upstream_id
from brave_search_mcp.models import errors
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from brave_search_mcp.state.response_cache import make_key
from testkit.clock import FakeClock as FakeTime
from tests.brave_client_support import BASE, KEY, Upstream, call, failing, make_client, web_body

pytestmark = pytest.mark.anyio

CAP = 16 * 1024
QUERY = [("q", "hello world")]


async def stream_of(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def gzip_reply(packed: bytes, *, pieces: int = 3) -> httpx2.Response:
    """A 200 whose gzip body streams in ``pieces`` chunks, as a real connection delivers it."""
    size = -(-len(packed) // pieces)
    chunks = [packed[i : i + size] for i in range(0, len(packed), size)]
    return httpx2.Response(200, content=stream_of(*chunks), headers={"Content-Encoding": "gzip"})


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[StateBackend]:
    state = await open_state(f"sqlite://{tmp_path / 'state.db'}", cache_max_entries=16)
    try:
        yield state
    finally:
        await state.aclose()


def client_on(backend: StateBackend, up: Upstream, ft: FakeTime, **overrides: Any) -> BraveClient:
    """A client of one process over the shared ``backend`` (each call is a process of its own)."""
    return make_client(up, ft, shared=SharedUpstream(backend, upstream_id(BASE, KEY)), **overrides)


def stored_key() -> str:
    return f"{upstream_id(BASE, KEY)}:{FORMAT}:{make_key(Endpoint.WEB.value, QUERY)}"


async def test_a_gzip_answer_is_decoded_and_kept_shared_as_brave_sent_it(backend: StateBackend) -> None:
    raw = json.dumps(web_body("zipped")).encode()
    packed = gzip.compress(raw)
    ft = FakeTime()
    async with client_on(backend, Upstream(gzip_reply(packed)), ft) as first:
        response = await call(first, params=QUERY)
    assert response.data == web_body("zipped")
    assert (response.raw_body, response.body_bytes, response.attempts) == (raw, len(raw), 1)

    async def unused() -> bytes:
        raise AssertionError("the answer must be stored")

    assert await backend.cache.get_or_fetch(stored_key(), unused, 60) == (pack(200, packed, "gzip"), True)
    nobody = Upstream()  # a second process finds it stored: no request, the same decoded answer
    async with client_on(backend, nobody, ft) as second:
        again = await call(second, params=QUERY)
    assert nobody.requests == []
    assert (again.data, again.raw_body, again.body_bytes) == (web_body("zipped"), raw, len(raw))
    assert (again.cached, again.attempts) == (True, 0)


async def test_an_identity_answer_is_kept_shared_decoded(backend: StateBackend) -> None:
    raw = json.dumps(web_body("plain")).encode()
    ft = FakeTime()
    async with client_on(backend, Upstream(httpx2.Response(200, content=stream_of(raw))), ft) as first:
        await call(first, params=QUERY)

    async def unused() -> bytes:
        raise AssertionError("the answer must be stored")

    assert await backend.cache.get_or_fetch(stored_key(), unused, 60) == (pack(200, raw), True)


async def test_a_streamed_gzip_bomb_is_caught_by_the_decoded_size(backend: StateBackend) -> None:
    bomb = gzip.compress(b"{" + b" " * (4 * 1024 * 1024))
    assert len(bomb) < CAP
    async with client_on(backend, Upstream(gzip_reply(bomb)), FakeTime(), max_response_bytes=CAP) as client:
        exc = await failing(client, params=QUERY)
    assert isinstance(exc, errors.ResponseTooLarge)


async def test_a_stored_gzip_answer_over_this_process_cap_is_refused(backend: StateBackend) -> None:
    """Another process (with a larger cap) stored the answer; this one decodes it under its own cap."""
    big = json.dumps({**web_body(), "pad": "x" * (2 * CAP)}).encode()
    ft = FakeTime()
    async with client_on(backend, Upstream(gzip_reply(gzip.compress(big))), ft) as generous:
        await call(generous, params=QUERY)
    async with client_on(backend, Upstream(), ft, max_response_bytes=CAP) as strict:
        exc = await failing(strict, params=QUERY)
    assert isinstance(exc, errors.ResponseTooLarge)


@pytest.mark.parametrize(
    "value",
    [pack(200, b"not gzip at all", "gzip"), pack(200, b"{}", "br"), b"no header line", pack(200, b"[1, 2]")],
    ids=["corrupt", "unknown-encoding", "no-header", "not-an-object"],
)
async def test_an_unreadable_stored_answer_is_dropped_and_asked_again(backend: StateBackend, value: bytes) -> None:
    """Issue 36: a stored answer this version cannot read (a torn write, another version's) used to fail every call
    for that query with PARSE_ERROR until it expired; it is now dropped (status says so) and Brave is asked again."""

    async def stored() -> bytes:
        return value

    await backend.cache.get_or_fetch(stored_key(), stored, 60)
    await backend.settle()
    upstream = Upstream()
    async with client_on(backend, upstream, FakeTime()) as client:
        response = await call(client, params=QUERY)
    assert response.data["web"]["results"] and len(upstream.requests) == 1
    assert backend.health()["dropped"]["count"] == 1
