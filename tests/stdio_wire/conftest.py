"""The stdio transport's fixtures: the server's stderr in a file (the fake Brave is conftest's ``fake_server``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest


@pytest.fixture
def stderr_file(tmp_path: Path) -> Iterator[IO[bytes]]:
    """The server's stderr, in a file so a chatty server can never block on a full pipe."""
    with (tmp_path / "stderr.log").open("w+b") as file:
        yield file
