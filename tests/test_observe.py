"""The observer's rules for every upstream: each request that went out is counted and traced once, however it
ends (a cancelled one as ``cancelled``), with its state operations traced beside it; counters never go back."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
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
from brave_search_mcp.compose import open_client, open_tools
from brave_search_mcp.faces.metrics import MetricsObserver
from brave_search_mcp.state.base import StoreUnavailable
from brave_search_mcp.tracing import OtelSpans
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.searxng.provider import make_provider, search_request
from testkit.settings import make_settings
from testkit.sites import FakeSite
from testkit.sites.pages import page

from .test_metrics import samples
from .test_state_outage import RETRY, flaky

pytestmark = pytest.mark.anyio

Work = Callable[[MetricsObserver, httpx2.AsyncBaseTransport], Coroutine[Any, Any, object]]


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


def totals(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a counter family (``*_total``) in a scrape."""
    return {key: value for key, value in samples(text).items() if key[0].endswith("_total")}


async def test_a_store_outage_in_the_middle_never_lowers_a_counter(
    tmp_path: Path, clock: FakeClock, fake: FakeBrave
) -> None:
    """Look-ups through the shared cache before, during and after an outage of its store: every counter a scrape
    shows only grows, and the look-ups the memory answered meanwhile are counted too."""
    observer = MetricsObserver()
    settings = make_settings(cache_size=0)  # no local cache: every look-up goes to the shared one
    scrapes: list[dict[tuple[str, tuple[tuple[str, str], ...]], float]] = []
    async with (
        flaky(tmp_path / "state.db", clock) as (backend, store),
        open_client(settings, transport=fake.mock_transport(), backend=backend) as client,
        open_tools(settings, client=client, observer=observer) as tools,
    ):

        async def search(query: str) -> None:
            assert not (await tools.call("brave_web_search", {"query": query})).is_error
            scrapes.append(totals((await observer.exposition()).decode()))

        await search("before")  # a miss through the store
        await search("before")  # a hit through the store
        store.fault = StoreUnavailable("the store went away")
        await search("during")  # a miss in memory
        await search("during")  # a hit in memory
        store.fault = None
        await clock.sleep(RETRY)
        await search("after")  # a miss through the store again
    for earlier, later in itertools.pairwise(scrapes):
        for key, value in earlier.items():
            assert later.get(key, 0.0) >= value, key
    shared = {
        kind: scrapes[-1][(f"brave_search_cache_{kind}_total", (("cache", "shared"),))] for kind in ("hits", "misses")
    }
    assert shared == {"hits": 2, "misses": 3} and fake.hits() == 3


async def test_the_memory_backend_reports_its_shared_cache_figures() -> None:
    """Alone on memory the state backend's cache still holds read pages (and SearXNG's): its figures show."""
    observer = MetricsObserver()
    with FakeSite(host="127.0.0.2") as site:
        site.page("/article", page("article.html"))
        async with open_tools(make_settings(read_allowed_hosts=("127.0.0.2",)), observer=observer) as tools:
            assert tools.ports.client.limits.state.name == "memory"
            for _ in range(2):
                assert not (await tools.call("read_url", {"url": site.url("/article")})).is_error
            found = samples((await observer.exposition()).decode())
    shared = {kind: found[(f"brave_search_cache_{kind}_total", (("cache", "shared"),))] for kind in ("hits", "misses")}
    assert shared == {"hits": 1, "misses": 1} and site.count("/article") == 1
