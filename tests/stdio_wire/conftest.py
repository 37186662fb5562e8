"""The stdio transport's fixtures: a fake Brave to call, and the server's stderr in a file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from testkit.brave.http_server import FakeBraveServer


@pytest.fixture
def upstream(fake_server: FakeBraveServer) -> FakeBraveServer:
    """The shared ``fake_server``, by the name these tests use for it."""
    return fake_server


@pytest.fixture
def stderr_file(tmp_path: Path) -> Iterator[IO[bytes]]:
    """The server's stderr, in a file so a chatty server can never block on a full pipe."""
    with (tmp_path / "stderr.log").open("w+b") as file:
        yield file
