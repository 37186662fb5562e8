"""The URL reader's fetching stack (httpcore2, h11) loads on read_url's first call, not at a server's start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.brave.brave import VALID_KEY

PROBE = """
import sys, anyio
from brave_search_mcp.compose import open_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import build_server

async def main():
    build_server(Settings.from_env())
    async with open_tools(Settings.from_env()) as tools:
        started = {name: name in sys.modules for name in ("httpcore2", "h11", "brave_search_mcp.reader.reading")}
        reader = tools.ports.reader
        print(sorted(name for name, loaded in started.items() if loaded), type(reader).__name__)
        print(tools.ports.reader is reader, "httpcore2" in sys.modules)

anyio.run(main)
"""


def test_a_server_that_only_searches_never_loads_the_fetching_stack_and_the_first_read_builds_one_reader(
    tmp_path: Path,
) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    env |= {"BRAVE_SEARCH_API_KEY": VALID_KEY}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[] ObservedReader", "True True"]  # the UrlReader whose reads are counted
