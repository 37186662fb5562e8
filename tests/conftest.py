"""Shared fixtures: settings with a fake key, a fake clock, and the fake Brave upstream wired in."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from brave_search_mcp.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.logs import PACKAGE_LOGGER
from tests.fakes.brave import VALID_KEY, FakeBrave
from tests.fakes.http_server import FakeBraveServer

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "brave-fixtures"


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def clock(self) -> float:
        """The clock as a bound method, for code that takes ``clock=fake.clock``."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Yield once (so other tasks run), then advance by the wait and record it."""
        self.sleeps.append(seconds)
        await anyio.lowlevel.checkpoint()
        self.now += max(0.0, seconds)


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: a fake key, a fast explicit rate, tiny retry waits."""
    values: dict[str, Any] = {
        "api_key": SecretStr(VALID_KEY),
        "api_key_source": "BRAVE_SEARCH_API_KEY",
        "rate_limit": 1000.0,
        "burst": 1000,
        "retry_base_ms": 1,
        "retry_max_ms": 2,
        "timeout_seconds": 5.0,
    }
    values.update(overrides)
    return Settings(**values)


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
