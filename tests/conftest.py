"""Shared pytest fixtures: the fake clock, settings, fake Brave and SearXNG upstreams from testkit, and a test CA,
wired in."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from hypothesis import settings as hypothesis_settings

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import PACKAGE_LOGGER
from brave_search_mcp.providers.searxng.client import SearxngProvider
from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng, FakeSearxngServer
from testkit.searxng.provider import make_provider
from testkit.settings import make_settings
from tests import fault_cases

REPO_ROOT = Path(__file__).resolve().parent.parent
BRAVE_BODIES = REPO_ROOT / "tests" / "fixtures" / "brave"  # Brave bodies in the documented shapes (README there)
NETWORK_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")


# The property and fuzz tests draw the same examples on every run (seeded by each test's own code), so the
# README's test command passes or fails the same way every time. ``--hypothesis-profile=deep`` opts into fresh
# random examples on each run, ten times as many (``tests.fuzz.checks.examples`` scales each test's count).
hypothesis_settings.register_profile("repeatable", derandomize=True)
hypothesis_settings.register_profile("deep", derandomize=False, max_examples=1000)
hypothesis_settings.load_profile("repeatable")


@pytest.fixture(autouse=True, scope="session")
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In-process code (and the subprocesses that inherit its environment) that opens the default SQLite state
    writes it under a temporary state and cache home, not $HOME; the default key file is looked for under a
    temporary config home, so a developer's own stored key never changes what a test sees."""
    names = ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ[name] = str(tmp_path_factory.mktemp(name.lower()))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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
    """A fake Brave on a real loopback port, allowing 1,000 requests a second."""
    with FakeBraveServer(rate_per_second=1000) as server:
        yield server


@pytest.fixture
def searxng_server() -> Iterator[FakeSearxngServer]:
    """A fake SearXNG as measured, on a real loopback port."""
    with FakeSearxngServer(FakeSearxng()) as server:
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


@pytest.fixture
def network_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy or CA setting from the machine: each test sets exactly what it checks. Not autouse: a module that
    touches the network variables asks for it (``pytest.mark.usefixtures("network_env")``)."""
    for name in NETWORK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """A test certificate authority, one per module."""
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    """``ca``'s certificate written to a PEM file, as SSL_CERT_FILE would name it."""
    path = tmp_path / "corporate-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)
