"""Fixtures of the script tests: a private HOME, a PATH without client programs, the installed server."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.scripts.sandbox import BASIC_TOOLS, SERVER


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH directory with the basic tools and python3, but no codex, claude or uv."""
    path = tmp_path / "bin"
    path.mkdir()
    for tool in BASIC_TOOLS:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (path / tool).symlink_to(found)
    (path / "python3").symlink_to(sys.executable)
    return path


@pytest.fixture
def server() -> Path:
    if not SERVER.exists():
        pytest.skip(f"{SERVER} is missing; run `uv sync --extra dev`")
    return SERVER
