"""Fixtures of the fake-Brave tests: a fresh fake, and one real server (and keep-alive client) per module."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from testkit.brave import VALID_KEY, FakeBrave
from testkit.brave.http_server import FakeBraveServer


@pytest.fixture
def fake() -> FakeBrave:
    """A fresh fake with default limits."""
    return FakeBrave()


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeBraveServer]:
    with FakeBraveServer(rate_per_second=1000) as srv:
        yield srv


@pytest.fixture(scope="module")
def shared_http(shared_server: FakeBraveServer) -> Iterator[httpx2.Client]:
    headers = {"X-Subscription-Token": VALID_KEY}
    with httpx2.Client(base_url=shared_server.base_url, headers=headers, timeout=5.0) as client:
        yield client


@pytest.fixture
def server(shared_server: FakeBraveServer) -> FakeBraveServer:
    """The module's real server, with a fake that forgot earlier tests."""
    shared_server.fake.reset()
    return shared_server


@pytest.fixture
def http(server: FakeBraveServer, shared_http: httpx2.Client) -> httpx2.Client:
    """The module's keep-alive client for the real server."""
    return shared_http
