"""Shared pytest fixtures: the fake clock, settings and fake Brave upstream from testkit, wired in."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from brave_search_mcp.client import BraveClient
from brave_search_mcp.logs import PACKAGE_LOGGER
from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.settings import make_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "brave-fixtures"


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
