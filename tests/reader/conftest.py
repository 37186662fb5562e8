"""Fixtures for the reader: a fake site on 127.0.0.1, memory state on the fake clock, a reader factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from brave_search_mcp.reader import UrlReader, render_read
from brave_search_mcp.reader.addresses import system_resolver
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.sites import FakeSite

MakeReader = Callable[..., UrlReader]


@pytest.fixture
async def backend(clock: FakeClock) -> AsyncIterator[StateBackend]:
    state = await open_state("memory", cache_max_entries=100, clock=clock, sleep=clock.sleep)
    yield state
    await state.aclose()


@pytest.fixture
def site() -> Iterator[FakeSite]:
    with FakeSite() as running:
        yield running


@pytest.fixture
def make_reader(backend: StateBackend, clock: FakeClock) -> MakeReader:
    """A reader whose settings opt loopback 127.0.0.1 in unless a test says otherwise."""

    def make(*, resolver: Any = None, network: Any = None, ssl_context: Any = None, **overrides: Any) -> UrlReader:
        values: dict[str, Any] = {"read_allowed_hosts": ("127.0.0.1",), **overrides}
        settings = make_settings(**values)
        return UrlReader(settings, backend, clock, resolver or system_resolver, network, ssl_context, clock.sleep)

    return make


async def read(reader: UrlReader, url: str, **render: Any) -> tuple[dict[str, Any], str]:
    """Read ``url`` and render one part (the tool's two halves, as the lead will wire them)."""
    result = await reader.read(url)
    structured, text = render_read(result.document, **render)
    structured["cached"] = result.cached
    return structured, text
