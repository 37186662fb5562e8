"""The observer's rules for every upstream: each request that went out is counted and traced once, however it
ends (a cancelled one as ``cancelled``), with its state operations traced beside it; counters never go back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.faces.metrics import MetricsObserver
from brave_search_mcp.tracing import OtelSpans
from testkit.clock import FakeClock
from testkit.searxng.provider import make_provider, search_request
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio

Work = Callable[[MetricsObserver, httpx2.AsyncBaseTransport], Awaitable[object]]


@contextmanager
def traced() -> Iterator[tuple[MetricsObserver, InMemorySpanExporter]]:
    """A metrics observer whose spans go to memory through the SDK (the process's real tracer, no exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield MetricsObserver(OtelSpans(provider)), exporter
    finally:
        provider.shutdown()


def hanging(sent: anyio.Event) -> httpx2.MockTransport:
    """An upstream that takes every request and never answers."""

    async def handler(request: httpx2.Request) -> httpx2.Response:
        sent.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return httpx2.MockTransport(handler)


async def brave_get(observer: MetricsObserver, transport: httpx2.AsyncBaseTransport) -> object:
    async with BraveClient(make_settings(), transport=transport) as client:
        client.observer = observer
        return await client.get(Endpoint.WEB, [("q", "hello")])


async def answers_post(observer: MetricsObserver, transport: httpx2.AsyncBaseTransport) -> object:
    async with BraveClient(make_settings(), transport=transport) as client:
        client.observer = observer
        return [payload async for payload in client.stream_post(Endpoint.CHAT, {"messages": []})]


async def searxng_search(observer: MetricsObserver, transport: httpx2.AsyncBaseTransport) -> object:
    provider = make_provider(transport, FakeClock(), observer=observer)
    try:
        return await provider.search(search_request())
    finally:
        await provider.aclose()


@pytest.mark.parametrize(
    ("work", "labels", "state_spans"),
    [
        (brave_get, {"provider": "brave", "endpoint": "web"}, {"state admit", "state settle"}),
        (answers_post, {"provider": "brave", "endpoint": "answers"}, {"state admit", "state settle"}),
        (searxng_search, {"provider": "searxng", "endpoint": "search"}, {"state queue"}),
    ],
)
async def test_a_cancelled_request_is_counted_once_as_cancelled_and_its_span_failed(
    work: Work, labels: dict[str, str], state_spans: set[str]
) -> None:
    sent = anyio.Event()
    with traced() as (observer, exporter):
        async with anyio.create_task_group() as calls:
            calls.start_soon(work, observer, hanging(sent))
            with anyio.fail_after(10):
                await sent.wait()
            calls.cancel_scope.cancel()
        spans: list[ReadableSpan] = list(exporter.get_finished_spans())
    sample = observer.registry.get_sample_value
    assert sample("brave_search_upstream_requests_total", labels | {"status": "cancelled"}) == 1
    assert sample("brave_search_upstream_requests_total", labels | {"status": "error"}) is None
    (upstream,) = [span for span in spans if span.name == f"upstream {labels['provider']} {labels['endpoint']}"]
    assert upstream.status.status_code is StatusCode.ERROR and upstream.status.description == "CANCELLED"
    assert upstream.attributes is not None and upstream.attributes["outcome"] == "CANCELLED"
    assert state_spans <= {span.name for span in spans}  # the state operations of every upstream are traced

