"""What the reader's browser tests share: the Chromium they need, and one browser per module (launched by the first
test that renders, closed after the last) on the module's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from brave_search_mcp.reader.browser import Renderer
from testkit.programs import require

CHROMIUM = require("chromium", ".ci/run installs it: apt-get install -y chromium")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """The module's one event loop: the browser outlives a test."""
    return "asyncio"


@pytest.fixture(scope="module")
async def renderer() -> AsyncIterator[Renderer]:
    """The module's one browser."""
    shared = Renderer(CHROMIUM)
    yield shared
    await shared.aclose()
