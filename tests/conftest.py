"""Shared pytest fixtures: the fake clock, settings and fake Brave upstream from testkit, wired in."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import PACKAGE_LOGGER
from brave_search_mcp.providers.searxng.client import SearxngProvider
from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng
from testkit.searxng.provider import make_provider
from testkit.settings import make_settings
from tests import fault_cases

REPO_ROOT = Path(__file__).resolve().parent.parent
BRAVE_BODIES = REPO_ROOT / "tests" / "fixtures" / "brave"  # Brave bodies in the documented shapes (README there)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In-process code that opens the default SQLite state writes it under a temporary cache home, not $HOME."""
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache-home"))
    yield
    if saved is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved


@pytest.fixture(autouse=True)
def _restore_package_logging() -> Iterator[None]:
    """The CLI configures logging for its process; in tests, undo that after each test."""
    logger = logging.getLogger(PACKAGE_LOGGER)
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake() -> FakeBrave:
    return FakeBrave(rate_per_second=1000)


@pytest.fixture
async def client(fake: FakeBrave, clock: FakeClock) -> AsyncIterator[BraveClient]:
    async with BraveClient(
        make_settings(), transport=fake.mock_transport(), clock=clock, sleep=clock.sleep
    ) as brave_client:
        yield brave_client


@pytest.fixture
def fake_server() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(rate_per_second=1000) as server:
        yield server


@pytest.fixture
def searx() -> FakeSearxng:
    """A fake SearXNG instance as measured: 27 results a page, 3 pages."""
    return FakeSearxng()


@pytest.fixture
async def searxng(searx: FakeSearxng, clock: FakeClock) -> AsyncIterator[SearxngProvider]:
    """The SearXNG provider over ``searx``, on the fake clock."""
    provider = make_provider(searx, clock)
    yield provider
    await provider.aclose()


@pytest.fixture
def counting_server() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(fault_cases.new_fake()) as server:
        yield server
