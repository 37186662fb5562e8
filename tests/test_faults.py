"""Fault injection: every fault the fake Brave can produce, through every tool, ends as the right envelope in time.

Each case injects one fault for exactly as many answers as the contract says the client will try, calls one
tool through the tool boundary (``SearchService.call``, the code behind every MCP tool) and checks the envelope
code, the retryable flag, the number of upstream attempts, the waits between them (on a fake clock) and that the
very next call of the same tool succeeds. HTTP faults run on the fake's MockTransport face; transport faults
(reset, slow body, hang, truncated gzip, oversize stream, refused) run on the real local HTTP server, because
only real sockets can fail that way. A few cases go through the in-memory MCP client too.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from testkit.brave.http_server import FakeBraveServer
from tests.fault_cases import (
    CAP,
    HTTP_FAULTS,
    OVERSIZE,
    SEARCH_TYPES,
    SERVER_FAULTS,
    CountingFake,
    Fault,
    _matrix,
    check_envelope,
    harness,
    new_fake,
    run_case,
)

pytestmark = pytest.mark.anyio


# -- the matrix -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "target"), _matrix(HTTP_FAULTS, every_search_type=True))
async def test_http_fault_through_every_tool(fault: Fault, target: str) -> None:
    fake = new_fake()
    async with harness(fake, **fault.settings) as h:
        await run_case(h, fault, target)


@pytest.mark.parametrize(("fault", "target"), _matrix(SERVER_FAULTS, every_search_type=False))
async def test_real_socket_fault_through_every_tool(
    fault: Fault, target: str, counting_server: FakeBraveServer
) -> None:
    # One retry keeps the real-time faults (0.2 s per attempt) cheap; the mock matrix covers retries=2.
    async with harness(counting_server.fake, base_url=counting_server.base_url, retries=1, **fault.settings) as h:
        await run_case(h, fault, target)


async def test_oversize_stream_is_abandoned_not_read_whole(counting_server: FakeBraveServer) -> None:
    fake = counting_server.fake
    assert isinstance(fake, CountingFake)
    fake.inject("oversize", size=OVERSIZE, gzip=False)
    async with harness(fake, base_url=counting_server.base_url) as h:
        outcome = await h.call("brave_web_search", {"query": "huge"})
    error = check_envelope(outcome, "RESPONSE_TOO_LARGE", False)
    assert error["details"]["limit_bytes"] == CAP
    assert fake.hits() == 1
    # The client hung up: the fake's stream ended early (socket error), long before its 32 MiB were produced.
    assert await anyio.to_thread.run_sync(fake.stream_closed.wait, 5.0)
    assert CAP < fake.streamed_bytes < OVERSIZE // 2


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there any more: connecting is refused at once


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("brave_web_search", {"query": "refused", "search_type": "videos"}),
        ("brave_summarizer", {"query": "refused"}),
        ("brave_summarizer", {"key": '{"query": "refused"}'}),
    ],
    ids=["web", "summarizer-query", "summarizer-key"],
)
async def test_connection_refused_for_real(tool: str, arguments: dict[str, Any]) -> None:
    fake = new_fake()
    async with harness(fake, base_url=f"http://127.0.0.1:{_closed_port()}") as h:
        outcome = await h.call(tool, arguments)
        error = check_envelope(outcome, "NETWORK_ERROR", True)
        assert error["details"]["attempts"] == h.settings.retries + 1
        assert "Traceback" not in error["message"]
        counters = h.client.counters()
        endpoint = "summarizer" if "key" in arguments else arguments.get("search_type", "web")
        assert counters[endpoint].requests == h.settings.retries + 1
        assert len(h.clock.sleeps) == h.settings.retries
        # The server goes on: help still answers.
        check_envelope(await h.call("brave_web_search_help", {"topic": "limits"}), None, False)


async def test_connection_refused_degrades_every_status_probe() -> None:
    fake = new_fake()
    async with harness(fake, base_url=f"http://127.0.0.1:{_closed_port()}") as h:
        outcome = await h.call("brave_web_search_status", {"probe_connectivity": True, "verbose": True})
    check_envelope(outcome, None, False)
    report = outcome.structured
    assert report["status"] == "degraded"
    assert [(p["code"], p["retryable"]) for p in report["probe"]] == [("NETWORK_ERROR", True)] * 4
    for kind in SEARCH_TYPES:
        assert report["counters"][kind]["requests"] == h.settings.retries + 1
